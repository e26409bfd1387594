package console

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/console"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/kerneltools"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// buggy adds the prices as they come: strings, so + concatenates them.
const buggy = `/** Totals the prices of a basket from the price service. */
export default async function (a: { url: string }): Promise<number> {
  const r = await tgp.fetch(a.url, {});
  const items: { item: string; price: string }[] = JSON.parse(r.body);
  console.log('basket of', items.length, 'items');
  let total: any = 0;
  for (const i of items) total = total + i.price;
  return total;
}
`

// fixed parses each price first.
const fixed = `/** Totals the prices of a basket from the price service. */
export default async function (a: { url: string }): Promise<number> {
  const r = await tgp.fetch(a.url, {});
  const items: { item: string; price: string }[] = JSON.parse(r.body);
  let total = 0;
  for (const i of items) total = total + Number(i.price);
  return total;
}
`

// chatty "fixes" it by fetching twice: the recording cannot answer that.
const chatty = `/** Totals the prices of a basket from the price service. */
export default async function (a: { url: string }): Promise<number> {
  await tgp.fetch(a.url, {});
  const r = await tgp.fetch(a.url, {});
  const items: { item: string; price: string }[] = JSON.parse(r.body);
  return items.reduce((t, i) => t + Number(i.price), 0);
}
`

const toolPath = "tools/total.ts"

// node is a real node with the buggy tool, a price service on loopback
// and its console served on loopback.
type node struct {
	rt      *host.Runtime
	url     string // the console's base URL
	prices  string // the price service's URL
	console *console.Server
}

// startNode starts a node on a temporary root and serves its console.
func startNode(t *testing.T, opts console.Options) *node {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, toolPath), []byte(buggy), 0o644); err != nil {
		t.Fatal(err)
	}
	prices := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`[{"item":"tea","price":"1.50"},{"item":"cake","price":"2.25"}]`))
	}))
	t.Cleanup(prices.Close)
	rt, err := host.Start(context.Background(), host.Config{
		Root: root, Isolation: "inprocess", Logger: quiet,
		Fetch: host.FetchConfig{Allow: []string{prices.URL + "/"}},
		// A tracer that keeps nothing but gives every run a trace id, as
		// a node exporting to a collector does.
		TracerProvider: tracerProvider(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.Addr, opts.Logger, opts.Poll = ln.Addr().String(), quiet, 200*time.Millisecond
	srv, err := rt.Console(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if hs.Shutdown(ctx) != nil {
			_ = hs.Close()
		}
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})
	return &node{rt: rt, url: "http://" + ln.Addr().String(), prices: prices.URL + "/v1/basket", console: srv}
}

// tracerProvider is an OpenTelemetry SDK tracer provider with no exporter,
// shut down with the test.
func tracerProvider(t *testing.T) *sdktrace.TracerProvider {
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}

// record runs the tool once as the default process and returns its run.
func (n *node) record(t *testing.T) string {
	t.Helper()
	args, _ := json.Marshal(map[string]any{"path": toolPath, "args": map[string]string{"url": n.prices}})
	out, err := n.rt.Call(context.Background(), "exec_tool", args)
	if err != nil {
		t.Fatal(err)
	}
	var res kerneltools.ExecResult
	if err := json.Unmarshal(out, &res); err != nil || res.RunID == "" || string(res.Result.Result) != `"01.502.25"` {
		t.Fatalf("exec_tool = %s (%v); want the bug's \"01.502.25\"", out, err)
	}
	return res.RunID
}

// token mints a token of the node with grants on scope.
func (n *node) token(scope string, rights ...capability.Right) string {
	var gs []capability.Grant
	for _, r := range rights {
		gs = append(gs, capability.Grant{Right: r, Scope: scope})
	}
	return n.rt.Kernel().Authority().Mint("tester", gs, capability.Caveats{}).Encode()
}

func TestMain(m *testing.M) {
	executor.WorkerMain()
	code := m.Run()
	stopBrowser()
	os.Exit(code)
}

// client is an HTTP client with a cookie jar that does not follow
// redirects.
func client(t *testing.T) *http.Client {
	t.Helper()
	jar := newJar()
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 30 * time.Second}
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func postForm(t *testing.T, c *http.Client, u string, form map[string]string) (int, string) {
	t.Helper()
	vals := make([]string, 0, len(form))
	for k, v := range form {
		vals = append(vals, k+"="+queryEscape(v))
	}
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(strings.Join(vals, "&")))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// login logs c in with tok and returns the session's CSRF token.
func login(t *testing.T, n *node, c *http.Client, tok string) string {
	t.Helper()
	code, body := postForm(t, c, n.url+"/login", map[string]string{"token": tok, "next": "/runs"})
	if code != http.StatusSeeOther {
		t.Fatalf("login: %d %s", code, body)
	}
	_, body = get(t, c, n.url+"/runs")
	_, rest, ok := strings.Cut(body, `name="csrf" value="`)
	if !ok {
		t.Fatalf("no CSRF token on /runs: %s", body)
	}
	csrf, _, _ := strings.Cut(rest, `"`)
	return csrf
}

// TestNodeRefusesWithoutValidToken: without a session every page sends
// the browser to the login page; a token of another node, or a revoked
// one, logs no one in.
func TestNodeRefusesWithoutValidToken(t *testing.T) {
	n := startNode(t, console.Options{})
	id := n.record(t)
	c := client(t)
	for _, p := range []string{"/runs", "/runs/" + id, "/runs/" + id + "/debug"} {
		if code, _ := get(t, c, n.url+p); code != http.StatusSeeOther {
			t.Errorf("GET %s without a session: %d, want 303 to /login", p, code)
		}
	}
	otherNode, err := capability.NewAuthority([]byte("another node's key, 32 bytes long"), nil)
	if err != nil {
		t.Fatal(err)
	}
	other := otherNode.Mint("x", []capability.Grant{{Right: capability.Read}}, capability.Caveats{}).Encode()
	if code, body := postForm(t, c, n.url+"/login", map[string]string{"token": other}); code != http.StatusUnauthorized || !strings.Contains(body, "agentos token") {
		t.Errorf("login with another node's token: %d, want 401 saying how to mint one", code)
	}
	tok := n.token("tools/", capability.Read)
	dec, _ := capability.Decode(tok)
	login(t, n, c, tok)
	n.rt.Kernel().Authority().Revoke(dec.ID)
	if code, _ := get(t, c, n.url+"/runs"); code != http.StatusSeeOther {
		t.Errorf("a revoked token's session: %d, want 303 to /login", code)
	}
}

// TestNodeRightsApply: a token sees only the runs of the tools it may
// read, replays only with exec, and saves only with write (the kernel's
// refusal).
func TestNodeRightsApply(t *testing.T) {
	n := startNode(t, console.Options{})
	id := n.record(t)

	blind := client(t)
	login(t, n, blind, n.token("tools/other/", capability.Read, capability.Exec))
	if _, body := get(t, blind, n.url+"/runs"); strings.Contains(body, id) {
		t.Errorf("a token without read on %s lists its run", toolPath)
	}
	if code, _ := get(t, blind, n.url+"/runs/"+id); code != http.StatusNotFound {
		t.Errorf("a token without read on the tool opens its run: %d, want 404", code)
	}

	reader := client(t)
	csrf := login(t, n, reader, n.token("tools/", capability.Read))
	if _, body := get(t, reader, n.url+"/runs"); !strings.Contains(body, id) {
		t.Errorf("a reader does not see run %s", id)
	}
	if code, body := postForm(t, reader, n.url+"/runs/"+id+"/replay", map[string]string{"csrf": csrf, "mode": "recorded"}); code != http.StatusForbidden || !strings.Contains(body, "exec") {
		t.Errorf("replay without exec: %d, want 403 naming the right", code)
	}
	if code, body := postForm(t, reader, n.url+"/runs/"+id+"/save", map[string]string{"csrf": csrf, "source": fixed}); code != http.StatusForbidden || !strings.Contains(body, "write") {
		t.Errorf("save without write: %d, want 403 naming the right", code)
	}

	dev := client(t)
	csrf = login(t, n, dev, n.token("tools/", capability.Read, capability.Exec, capability.Write))
	code, body := postForm(t, dev, n.url+"/runs/"+id+"/replay", map[string]string{"csrf": csrf, "mode": "edited", "source": fixed})
	if code != http.StatusOK || !strings.Contains(body, "3.75") || strings.Contains(body, `id="divergence"`) {
		t.Errorf("replay of the fix: %d, want 3.75 and no divergence:\n%s", code, body)
	}
	if code, _ := postForm(t, dev, n.url+"/runs/"+id+"/save", map[string]string{"source": fixed}); code != http.StatusForbidden {
		t.Errorf("save without the CSRF token: %d, want 403", code)
	}
	if code, body := postForm(t, dev, n.url+"/runs/"+id+"/save", map[string]string{"csrf": csrf, "source": fixed}); code != http.StatusOK || !strings.Contains(body, `id="saved"`) {
		t.Errorf("save: %d %s", code, body)
	}
	if b, err := os.ReadFile(filepath.Join(n.rt.Root(), toolPath)); err != nil || string(b) != fixed {
		t.Errorf("the tool after the save: %q %v", b, err)
	}
}
