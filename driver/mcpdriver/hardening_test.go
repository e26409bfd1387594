package mcpdriver_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/driver/mcpdriver"
	"github.com/agentos-run/agentos/internal/mcptest"
)

// Review 14 item 4: the bearer token goes to the configured origin only.
// A redirect to another origin is refused (that origin sees nothing, let
// alone the token); a redirect within the origin is followed with it.
func TestBearerTokenStaysOnItsOrigin(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string // the Authorization headers the other origin saw
	)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer other.Close()
	s := mcptest.NewServer()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	var authed atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		authed.Add(1)
		h.ServeHTTP(w, r)
	})
	home := httptest.NewServer(mux)
	defer home.Close()
	defer func() {
		for ss := range s.Sessions() {
			_ = ss.Close()
		}
	}()

	getenv := func(k string) string {
		if k == "MCP_T_TOKEN" {
			return "s3cret"
		}
		return ""
	}
	c := newClient(t, mcpdriver.Options{Getenv: getenv, Servers: map[string]mcpdriver.Server{
		"away":  {URL: home.URL + "/away", TokenEnv: "MCP_T_TOKEN", Timeout: 10 * time.Second},
		"moved": {URL: home.URL + "/moved", TokenEnv: "MCP_T_TOKEN", Timeout: 10 * time.Second},
	}})
	if _, err := call(t, c, "away", "add", `{"a":1,"b":1}`); err == nil || !strings.Contains(err.Error(), "redirect") {
		t.Fatalf("a redirect to another origin: %v", err)
	}
	mu.Lock()
	if len(seen) != 0 {
		t.Fatalf("the other origin saw %d requests (Authorization %q)", len(seen), seen)
	}
	mu.Unlock()
	if out, err := call(t, c, "moved", "add", `{"a":1,"b":1}`); err != nil || string(out) != `{"sum":2}` {
		t.Fatalf("a redirect within the origin: %s %v", out, err)
	}
	if authed.Load() == 0 {
		t.Fatal("the origin never saw the token")
	}
}

// Review 14 item 4: token_env over plain http:// only to a loopback host.
func TestTokenEnvNeedsHTTPSOffLoopback(t *testing.T) {
	for url, ok := range map[string]bool{
		"http://mcp.example.com/mcp":  false,
		"http://10.0.0.7:8080/mcp":    false,
		"https://mcp.example.com/mcp": true,
		"http://127.0.0.1:8765/mcp":   true,
		"http://localhost/mcp":        true,
		"http://[::1]:80/mcp":         true,
	} {
		err := mcpdriver.Server{URL: url, TokenEnv: "TOK"}.Validate("s")
		if ok != (err == nil) || err != nil && (!errors.Is(err, mcpdriver.ErrConfig) || !strings.Contains(err.Error(), "https://")) {
			t.Errorf("%s: %v", url, err)
		}
		if err := (mcpdriver.Server{URL: url}).Validate("s"); err != nil {
			t.Errorf("%s without a token: %v", url, err)
		}
	}
}

// Review 14 item 10: a stdio server runs in a process group of its own,
// killed as a whole: a child it started (npx starts node) does not survive
// Close, even one holding its stderr open.
func TestStdioServerChildDoesNotSurviveClose(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	t.Setenv(mcptest.StdioEnv, "1")
	c, err := mcpdriver.New(mcpdriver.Options{Servers: map[string]mcpdriver.Server{"local": {
		Command: []string{"sh", "-c", `sleep 600 & echo $! > "$1"; exec "$0" -test.run=^$`, exe, pidFile},
		Env:     []string{mcptest.StdioEnv}, Timeout: 20 * time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := call(t, c, "local", "add", `{"a": 1, "b": 2}`); err != nil || string(out) != `{"sum":3}` {
		t.Fatalf("add: %s %v", out, err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || !alive(pid) {
		t.Fatalf("the server's child %q is not running before Close: %v", b, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 0; alive(pid); i++ { // bounded: killed, it is gone at once; reaping may lag
		if i == 200 {
			t.Fatalf("the stdio server's child %d survived Close", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// Review 14 item 11: a stdio server's stderr, quoted in the error that
// reaches the tool, the journal and the model, has the values of the
// variables passed to it scrubbed; the operator's log has all of it.
func TestStdioServerStderrIsScrubbed(t *testing.T) {
	const secret = "ghp_s3cr3tV4lue/with+chars"
	var log bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&log, &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	getenv := func(k string) string {
		if k == "MCP_SECRET_KEY" {
			return secret
		}
		return os.Getenv(k)
	}
	c := newClient(t, mcpdriver.Options{Logger: logger, Getenv: getenv, Servers: map[string]mcpdriver.Server{"broken": {
		Command: []string{"sh", "-c", `echo "bad key $MCP_SECRET_KEY" >&2; echo "quoted key=$(printf %s "$MCP_SECRET_KEY" | sed 's|/|%2F|; s|+|%2B|')" >&2; exit 3`},
		Env:     []string{"MCP_SECRET_KEY"}, Timeout: 10 * time.Second}}})
	_, err := call(t, c, "broken", "add", `{}`)
	if err == nil || !strings.Contains(err.Error(), "bad key [$MCP_SECRET_KEY]") {
		t.Fatalf("the error does not quote the scrubbed stderr: %v", err)
	}
	if strings.Contains(err.Error(), "s3cr3tV4lue") {
		t.Fatalf("the error carries the secret: %v", err)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(log.String(), "bad key "+secret) {
		t.Fatalf("the log lacks the full stderr: %s", log.String())
	}
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// Review 14 item 15: names read from the cache file are checked like a
// live tools/list's: a tool whose name is no file name, or of another
// server, is skipped; a file of another server is ignored.
func TestCacheFileNamesAreChecked(t *testing.T) {
	dir := t.TempDir()
	cache := `{"server": "t", "tools": [
		{"server": "t", "name": "add"},
		{"server": "t", "name": "../../evil"},
		{"server": "t", "name": "x\");process.exit(1);(\""},
		{"server": "other", "name": "stolen"}]}`
	if err := os.WriteFile(filepath.Join(dir, "t.json"), []byte(cache), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "u.json"), []byte(`{"server": "other", "tools": [{"server": "other", "name": "add"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	down := "http://127.0.0.1:1/mcp" // nothing listens: the cache answers
	c := newClient(t, mcpdriver.Options{CacheDir: dir, Servers: map[string]mcpdriver.Server{"t": {URL: down, Timeout: 5 * time.Second}, "u": {URL: down, Timeout: 5 * time.Second}}})
	names, err := c.List(context.Background(), "t")
	if err != nil || strings.Join(names, ",") != "t/add.ts" {
		t.Fatalf("t: %q %v", names, err)
	}
	if names, err := c.List(context.Background(), "u"); err == nil {
		t.Fatalf("u's cache of another server was used: %q", names)
	}
}
