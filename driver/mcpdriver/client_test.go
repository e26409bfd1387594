package mcpdriver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/mcpdriver"
	"github.com/agentos-run/agentos/internal/mcptest"
	"github.com/agentos-run/agentos/transpile"
)

func newClient(t *testing.T, opts mcpdriver.Options) *mcpdriver.Client {
	t.Helper()
	c, err := mcpdriver.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

func call(t *testing.T, c *mcpdriver.Client, server, tool, args string) (json.RawMessage, error) {
	t.Helper()
	req, _ := json.Marshal(map[string]any{"server": server, "tool": tool, "args": json.RawMessage(args)})
	return c.Do(context.Background(), "call", req)
}

// The "call" operation over streamable HTTP: structuredContent when the
// tool has an output schema, the content array otherwise, isError as a
// *driver.Error with the server's message.
func TestCallOverHTTP(t *testing.T) {
	srv := mcptest.StartHTTP(t, "")
	c := newClient(t, mcpdriver.Options{Servers: map[string]mcpdriver.Server{"test": {URL: srv.URL}}})

	out, err := call(t, c, "test", "add", `{"a": 2, "b": 40}`)
	if err != nil || string(out) != `{"sum":42}` {
		t.Fatalf("add: %s %v", out, err)
	}
	out, err = call(t, c, "test", "echo", `{"message": "hi"}`)
	if err != nil || string(out) != `[{"text":"echo: hi","type":"text"}]` {
		t.Fatalf("echo: %s %v", out, err)
	}
	_, err = call(t, c, "test", "fail", `{"reason": "the tracker is read-only today"}`)
	var de *driver.Error
	if !errors.As(err, &de) || de.Code != mcpdriver.CodeToolError || de.Message != "test/fail: the tracker is read-only today" {
		t.Fatalf("isError: %#v", err)
	}
	if _, err := call(t, c, "test", "nope", `{}`); !errors.As(err, &de) || !strings.Contains(de.Message, "nope") {
		t.Fatalf("unknown tool: %v", err)
	}
	if _, err := call(t, c, "github", "x", `{}`); !errors.As(err, &de) || de.Code != driver.CodeNotFound || !strings.Contains(de.Message, "configured servers are test") {
		t.Fatalf("unknown server: %v", err)
	}
	if _, err := c.Do(context.Background(), "call", json.RawMessage(`{"server":"test","tool":"add","argz":{}}`)); !errors.As(err, &de) || de.Code != driver.CodeInvalid {
		t.Fatalf("misspelled field: %v", err)
	}
	// The session is kept: still answering after the failures.
	if out, err := call(t, c, "test", "add", `{"a": 1, "b": 1}`); err != nil || string(out) != `{"sum":2}` {
		t.Fatalf("add again: %s %v", out, err)
	}
}

// A stdio server is started on first use with only PATH, HOME and the
// named variables; when it dies, the call fails and the next one starts it
// again.
func TestStdioServerReconnects(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(mcptest.StdioEnv, "1")
	c := newClient(t, mcpdriver.Options{Servers: map[string]mcpdriver.Server{"local": {Command: []string{exe, "-test.run=^$"}, Env: []string{mcptest.StdioEnv}, Timeout: 20 * time.Second}}})
	if out, err := call(t, c, "local", "add", `{"a": 1, "b": 2}`); err != nil || string(out) != `{"sum":3}` {
		t.Fatalf("add: %s %v", out, err)
	}
	_, err = call(t, c, "local", "exit", `{}`)
	var de *driver.Error
	if !errors.As(err, &de) || de.Code != driver.CodeUnavailable {
		t.Fatalf("a server that died mid-call: %v", err)
	}
	if out, err := call(t, c, "local", "add", `{"a": 5, "b": 5}`); err != nil || string(out) != `{"sum":10}` {
		t.Fatalf("add after the restart: %s %v", out, err)
	}
}

// A stdio server that does not start says why, quoting its stderr.
func TestStdioServerThatCannotStart(t *testing.T) {
	c := newClient(t, mcpdriver.Options{Servers: map[string]mcpdriver.Server{"broken": {Command: []string{"sh", "-c", "echo no such config >&2; exit 3"}, Timeout: 10 * time.Second}}})
	_, err := call(t, c, "broken", "add", `{}`)
	var de *driver.Error
	if !errors.As(err, &de) || de.Code != driver.CodeUnavailable || !strings.Contains(de.Message, "no such config") {
		t.Fatalf("a server that exits: %v", err)
	}
}

// An HTTP server's bearer token comes from token_env, never the file.
func TestBearerToken(t *testing.T) {
	srv := mcptest.StartHTTP(t, "s3cret")
	env := map[string]string{}
	c := newClient(t, mcpdriver.Options{Servers: map[string]mcpdriver.Server{"t": {URL: srv.URL, TokenEnv: "MCP_T_TOKEN"}}, Getenv: func(k string) string { return env[k] }})
	if _, err := call(t, c, "t", "add", `{"a":1,"b":1}`); err == nil || !strings.Contains(err.Error(), "MCP_T_TOKEN") {
		t.Fatalf("no token: %v", err)
	}
	env["MCP_T_TOKEN"] = "s3cret"
	if out, err := call(t, c, "t", "add", `{"a":1,"b":1}`); err != nil || string(out) != `{"sum":2}` {
		t.Fatalf("with the token: %s %v", out, err)
	}
}

// The tool lists are cached (0600): a second client, with the server
// stopped, lists and generates the same modules, and its calls fail as
// unavailable.
func TestToolListCacheServesOffline(t *testing.T) {
	srv := mcptest.StartHTTP(t, "")
	cache := filepath.Join(t.TempDir(), "mcp")
	servers := map[string]mcpdriver.Server{"test": {URL: srv.URL, Timeout: 5 * time.Second}}
	live := newClient(t, mcpdriver.Options{Servers: servers, CacheDir: cache})
	names, err := live.List(context.Background(), "test")
	if err != nil || strings.Join(names, " ") != "test/add.ts test/create_issue.ts test/echo.ts test/exit.ts test/fail.ts" {
		t.Fatalf("list: %v %v", names, err)
	}
	top, _ := live.List(context.Background(), "")
	if strings.Join(top, " ") != "test/" {
		t.Fatalf("top: %v", top)
	}
	src, err := live.ReadFile(context.Background(), "test/add.ts")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(cache, "test.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cache file: %v %v", fi, err)
	}
	srv.Close()

	offline := newClient(t, mcpdriver.Options{Servers: servers, CacheDir: cache})
	src2, err := offline.ReadFile(context.Background(), "test/add")
	if err != nil || string(src2) != string(src) {
		t.Fatalf("offline module: %v\n%s", err, src2)
	}
	if names2, err := offline.List(context.Background(), "test"); err != nil || len(names2) != len(names) {
		t.Fatalf("offline list: %v %v", names2, err)
	}
	var de *driver.Error
	if _, err := call(t, offline, "test", "add", `{"a":1,"b":1}`); !errors.As(err, &de) || de.Code != driver.CodeUnavailable {
		t.Fatalf("offline call: %v", err)
	}
	if _, err := offline.ReadFile(context.Background(), "test/nope.ts"); !errors.Is(err, mcpdriver.ErrUnknownTool) && !errors.Is(err, mcpdriver.ErrUnavailable) {
		t.Fatalf("unknown module offline: %v", err)
	}
}

// The generated module: an interface from inputSchema with the properties'
// descriptions, the output type from outputSchema, the description as
// JSDoc, a default export calling tgp.mcp_call; it compiles.
func TestGeneratedModule(t *testing.T) {
	srv := mcptest.StartHTTP(t, "")
	c := newClient(t, mcpdriver.Options{Servers: map[string]mcpdriver.Server{"tracker": {URL: srv.URL}}})
	src, err := c.ReadFile(context.Background(), "tracker/create_issue.ts")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for _, want := range []string{
		"export interface CreateIssueInput {",
		"  /** the issue's title */\n  title: string;",
		"  body?: string;",
		"  labels?: null | string[];",
		"export interface CreateIssueOutput {",
		"  number: number;",
		" * Create an issue in the tracker.\n * Returns its number and URL.",
		"@tag mcp, tracker",
		"export default async function createIssue(input: CreateIssueInput): Promise<CreateIssueOutput> {",
		`return (await tgp.mcp_call("tracker", "create_issue", input)) as CreateIssueOutput;`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the module lacks %q:\n%s", want, s)
		}
	}
	echo, _ := c.ReadFile(context.Background(), "tracker/echo.ts")
	if !strings.Contains(string(echo), "export type EchoOutput = Array<{ type: string; text?: string;") {
		t.Errorf("a tool without outputSchema answers content items:\n%s", echo)
	}
	if _, err := transpile.New(8).Transpile("/mcp/tracker/create_issue.ts", src); err != nil {
		t.Fatalf("the module does not compile: %v\n%s", err, s)
	}
}

// IMPORTANT property of the modules: their run-time JavaScript depends
// only on the server and tool names, so a replay runs the same code
// whatever the server says now.
func TestModuleRuntimeCodeIgnoresTheSchemas(t *testing.T) {
	a := mcpdriver.Tool{Server: "s", Name: "do_it", Description: "One.", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)}
	b := mcpdriver.Tool{Server: "s", Name: "do_it", Description: "Two, longer.", InputSchema: json.RawMessage(`{"type":"object","properties":{"y":{"type":"integer"}},"required":["y"]}`), OutputSchema: json.RawMessage(`{"type":"object","properties":{"z":{"type":"boolean"}}}`)}
	tr := transpile.New(8)
	ja, err := tr.Transpile("/mcp/s/do_it.ts", mcpdriver.Module(a))
	if err != nil {
		t.Fatal(err)
	}
	jb, err := tr.Transpile("/mcp/s/do_it.ts", mcpdriver.Module(b))
	if err != nil {
		t.Fatal(err)
	}
	if stripComments(ja.JS) != stripComments(jb.JS) {
		t.Fatalf("the run-time code depends on the schema:\n%s\n---\n%s", ja.JS, jb.JS)
	}
}

func stripComments(js string) string {
	var out []string
	for _, l := range strings.Split(js, "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "//") || strings.HasPrefix(t, "/*") || strings.HasPrefix(t, "*") || t == "" {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func TestServerValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    mcpdriver.Server
		want string
	}{
		{"ok", mcpdriver.Server{Command: []string{"x"}}, ""},
		{"ok", mcpdriver.Server{URL: "https://h/mcp", TokenEnv: "TOK"}, ""},
		{"bad/name", mcpdriver.Server{URL: "https://h/mcp"}, "server name"},
		{"both", mcpdriver.Server{URL: "https://h/mcp", Command: []string{"x"}}, "both command and url"},
		{"none", mcpdriver.Server{}, "neither command nor url"},
		{"scheme", mcpdriver.Server{URL: "ftp://h/mcp"}, "http:// or https://"},
		{"creds", mcpdriver.Server{URL: "https://u:p@h/mcp"}, "carries credentials"},
		{"envvalue", mcpdriver.Server{Command: []string{"x"}, Env: []string{"TOKEN=abc"}}, "not an environment variable name"},
		{"tokstdio", mcpdriver.Server{Command: []string{"x"}, TokenEnv: "T"}, "token_env is for an HTTP server"},
		{"neg", mcpdriver.Server{Command: []string{"x"}, Timeout: -1}, "negative"},
	} {
		err := tc.s.Validate(tc.name)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, mcpdriver.ErrConfig)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// Many calls in flight at once share one session (the device is called
// from several goroutines of a run).
func TestConcurrentCalls(t *testing.T) {
	srv := mcptest.StartHTTP(t, "")
	c := newClient(t, mcpdriver.Options{Servers: map[string]mcpdriver.Server{"test": {URL: srv.URL}}})
	const n = 16
	errs := make(chan error, n)
	for i := range n {
		go func() {
			args, _ := json.Marshal(map[string]int{"a": i, "b": 1})
			out, err := call(t, c, "test", "add", string(args))
			if err == nil && string(out) != fmt.Sprintf(`{"sum":%d}`, i+1) {
				err = fmt.Errorf("add %d+1 answered %s", i, out)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
