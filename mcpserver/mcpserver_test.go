package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/mcpserver"
)

// wait bounds every wait of these tests for something the server sends.
const wait = time.Minute

var quiet = slog.New(slog.DiscardHandler)

// env is a real runtime (process isolation, a bbolt journal, a Git-less
// tool root under t.TempDir()) and an MCP server of its tools.
type env struct {
	rt    *host.Runtime
	srv   *mcpserver.Server
	ended chan string // the error kind of every exec_tool call that ended, from the server's log
}

func newEnv(t *testing.T, cfg host.Config) *env {
	t.Helper()
	cfg.Root, cfg.Logger = t.TempDir(), quiet
	rt, err := host.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan string, 64)
	log := slog.New(endedHandler{ended})
	srv, err := mcpserver.New(mcpserver.Options{Node: rt.Node(), Registry: rt.Node().RegistryClient(), ToolsDir: cfg.Tools(), Logger: log, ProgressInterval: 50 * time.Millisecond,
		Journal: rt.Journal(), Personas: rt.Personas(), PersonaPoll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})
	return &env{rt: rt, srv: srv, ended: ended}
}

// endedHandler sends the error kind of every exec_tool call that ended.
type endedHandler struct{ ch chan string }

func (h endedHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h endedHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h endedHandler) WithGroup(string) slog.Handler            { return h }
func (h endedHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "mcp: tool call ended" {
		return nil
	}
	var tool, kind string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "tool":
			tool = a.Value.String()
		case "error_kind":
			kind = a.Value.String()
		}
		return true
	})
	if tool == "exec_tool" {
		select {
		case h.ch <- kind:
		default:
		}
	}
	return nil
}

// connect connects a Go SDK client with opts to p's MCP server, in memory.
func (e *env) connect(t *testing.T, p *kernel.Process, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	srv, err := e.srv.For(p)
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: a protocol error: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func mustOK(t *testing.T, name string, res *mcp.CallToolResult) string {
	t.Helper()
	if res.IsError {
		t.Fatalf("%s failed: %s", name, text(res))
	}
	return text(res)
}

func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structuredContent %s is not an object: %v", b, err)
	}
	return m
}

func listTools(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out[tool.Name] = tool
	}
	return out
}

// TestKernelTools: tools/list has every kernel tool with the name,
// description and schema of node.Tools, and a call of each works as the
// default process.
func TestKernelTools(t *testing.T) {
	e := newEnv(t, host.Config{})
	cs := e.connect(t, e.rt.Agent(), nil)
	if got := cs.InitializeResult().ServerInfo.Name; got != "agentos" {
		t.Errorf("server name %q", got)
	}
	want, err := e.rt.Tools()
	if err != nil {
		t.Fatal(err)
	}
	listed := listTools(t, cs)
	for _, k := range want {
		got, ok := listed[k.Name]
		if !ok {
			t.Fatalf("tools/list lacks %s; it has %v", k.Name, keys(listed))
		}
		schema, _ := json.Marshal(got.InputSchema)
		if got.Description != k.Description || !jsonEqual(t, schema, k.Parameters) {
			t.Errorf("%s: listed %q %s, want %q %s", k.Name, got.Description, schema, k.Description, k.Parameters)
		}
	}
	mustOK(t, "write_file", call(t, cs, "write_file", map[string]any{"path": samples.FibPath, "content": samples.FibTool}))
	if got := mustOK(t, "read_file", call(t, cs, "read_file", map[string]any{"path": samples.FibPath})); got != samples.FibTool {
		t.Errorf("read_file = %q", got)
	}
	if got := mustOK(t, "list_files", call(t, cs, "list_files", map[string]any{"dir": "tools"})); !strings.Contains(got, samples.FibPath) {
		t.Errorf("list_files = %s", got)
	}
	mustOK(t, "patch_file", call(t, cs, "patch_file", map[string]any{"path": samples.FibPath, "search": "Returns the n-th", "replace": "Computes the n-th"}))
	res := call(t, cs, "check_tool", map[string]any{"path": samples.FibPath})
	mustOK(t, "check_tool", res)
	if s := structured(t, res); s["valid"] != true || s["risk"] != "low" {
		t.Errorf("check_tool structuredContent = %v", s)
	}
	res = call(t, cs, "search_tools", map[string]any{"query": "fibonacci number"})
	if got := mustOK(t, "search_tools", res); !strings.Contains(got, samples.FibPath) {
		t.Errorf("search_tools = %s", got)
	}
	res = call(t, cs, "exec_tool", map[string]any{"path": samples.FibPath, "args": map[string]any{"n": 10}})
	mustOK(t, "exec_tool", res)
	if s := structured(t, res); s["success"] != true || s["result"] != 55.0 {
		t.Errorf("exec_tool structuredContent = %v", s)
	}
	res = call(t, cs, "exec_sql", map[string]any{"sql": "SELECT 1 AS one"})
	if s := structured(t, res); !res.IsError && s["columns"] == nil {
		t.Errorf("exec_sql = %s", text(res))
	}
	// No model is configured: forge_tool is an isError result saying so.
	res = call(t, cs, "forge_tool", map[string]any{"spec": "add two numbers"})
	if !res.IsError || !strings.Contains(text(res), "model") {
		t.Errorf("forge_tool without a model = %v %s", res.IsError, text(res))
	}
}

func keys(m map[string]*mcp.Tool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// TestFailures: a failing call is an isError result with the kind and the
// message, never a protocol error.
func TestFailures(t *testing.T) {
	e := newEnv(t, host.Config{})
	cs := e.connect(t, e.rt.Agent(), nil)
	for _, c := range []struct {
		tool string
		args any
		kind string
		says string
	}{
		{"read_file", map[string]any{"path": "tools/none.ts"}, mcpserver.KindNotFound, "tools/none.ts"},
		{"read_file", map[string]any{"nope": 1}, mcpserver.KindInvalidArgs, "missing parameter"},
		{"write_file", map[string]any{"path": "outside/x.ts", "content": "x"}, mcpserver.KindDenied, "outside/x.ts"},
		{"exec_tool", map[string]any{"path": "tools/none.ts"}, mcpserver.KindNotFound, "tools/none.ts"},
	} {
		res := call(t, cs, c.tool, c.args)
		if !res.IsError {
			t.Errorf("%s %v: not an error: %s", c.tool, c.args, text(res))
			continue
		}
		if !strings.HasPrefix(text(res), c.kind+": ") || !strings.Contains(text(res), c.says) {
			t.Errorf("%s %v: %q, want kind %s saying %q", c.tool, c.args, text(res), c.kind, c.says)
		}
		if c.tool != "exec_tool" {
			errObj, _ := structured(t, res)["error"].(map[string]any)
			if errObj["kind"] != c.kind {
				t.Errorf("%s: structuredContent %v", c.tool, res.StructuredContent)
			}
		}
	}
}

// changes counts the list_changed notifications a client receives.
type changes struct{ ch chan struct{} }

func newChanges() *changes { return &changes{ch: make(chan struct{}, 64)} }

func (c *changes) handler(context.Context, *mcp.ToolListChangedRequest) {
	select {
	case c.ch <- struct{}{}:
	default:
	}
}

// until waits (bounded) for a notification after which cond holds.
func (c *changes) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(wait)
	for !cond() {
		select {
		case <-c.ch:
		case <-deadline:
			t.Fatalf("no tools/list_changed notification made %s true", what)
		}
	}
}

// TestListChanged: a tool written while the client is connected appears
// (list_changed, then in tools/list) and runs under its own name; a
// changed one is replaced; a removed one disappears.
func TestListChanged(t *testing.T) {
	e := newEnv(t, host.Config{})
	ch := newChanges()
	cs := e.connect(t, e.rt.Agent(), &mcp.ClientOptions{ToolListChangedHandler: ch.handler})
	if _, ok := listTools(t, cs)["math_fib"]; ok {
		t.Fatal("math_fib listed before it was written")
	}
	mustOK(t, "write_file", call(t, cs, "write_file", map[string]any{"path": samples.FibPath, "content": samples.FibTool}))
	var fib *mcp.Tool
	ch.until(t, "math_fib listed", func() bool { fib = listTools(t, cs)["math_fib"]; return fib != nil })
	if fib.Description != "Returns the n-th Fibonacci number." || fib.Meta[mcpserver.MetaPath] != samples.FibPath {
		t.Errorf("math_fib = %q %v", fib.Description, fib.Meta)
	}
	schema, _ := json.Marshal(fib.InputSchema)
	if !strings.Contains(string(schema), `"n"`) {
		t.Errorf("math_fib's inputSchema %s lacks n", schema)
	}
	res := call(t, cs, "math_fib", map[string]any{"n": 10})
	if got := mustOK(t, "math_fib", res); got != "55" {
		t.Errorf("math_fib(10) = %q", got)
	}
	if res.Meta["agentos/run_id"] == "" {
		t.Errorf("no run id in _meta: %v", res.Meta)
	}
	mustOK(t, "patch_file", call(t, cs, "patch_file", map[string]any{"path": samples.FibPath, "search": "Returns the n-th", "replace": "Computes the n-th"}))
	ch.until(t, "the new description listed", func() bool {
		t := listTools(t, cs)["math_fib"]
		return t != nil && strings.HasPrefix(t.Description, "Computes")
	})
	if err := e.rt.Registry().Remove(samples.FibPath); err != nil {
		t.Fatal(err)
	}
	ch.until(t, "math_fib gone", func() bool { _, ok := listTools(t, cs)["math_fib"]; return !ok })
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "math_fib", Arguments: map[string]any{"n": 1}}); err == nil && !res.IsError {
		t.Errorf("a removed tool still runs: %s", text(res))
	}
}

// TestNames: the naming rule and its collisions.
func TestNames(t *testing.T) {
	got := mcpserver.Names([]string{"tools/math/fib.ts", "tools/math_fib.ts", "tools/text/slug.v2.ts", "tools/list_files.ts", "tools/ok.js"}, "tools")
	if got["tools/text/slug.v2.ts"] != "text_slug-v2" || got["tools/ok.js"] != "ok" {
		t.Errorf("names = %v", got)
	}
	for _, p := range []string{"tools/math/fib.ts", "tools/math_fib.ts", "tools/list_files.ts"} {
		base := mcpserver.ToolName(p, "tools")
		if n := got[p]; !strings.HasPrefix(n, base+"_") || len(n) != len(base)+9 {
			t.Errorf("%s: %q, want %s_ and 8 hex digits (a collision)", p, n, base)
		}
	}
	if got["tools/math/fib.ts"] == got["tools/math_fib.ts"] {
		t.Error("colliding paths share a name")
	}
	again := mcpserver.Names([]string{"tools/list_files.ts"}, "tools")
	if again["tools/list_files.ts"] != got["tools/list_files.ts"] {
		t.Error("a collision with a kernel tool's name is not stable")
	}
}

// spinTool runs until it is cancelled or times out.
const spinTool = `/** Spins forever. */
export default function spin(args: { n: number }): number {
  let i = args.n;
  while (i >= 0) { i = i + 1; }
  return i;
}
`

// TestProgressAndCancel: a long run reports progress; cancelling it (the
// client's ctx ends: notifications/cancelled) ends the run cancelled.
func TestProgressAndCancel(t *testing.T) {
	e := newEnv(t, host.Config{Limits: host.LimitsConfig{Timeout: host.Duration(10 * time.Minute)}})
	progress := make(chan string, 64)
	cs := e.connect(t, e.rt.Agent(), &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		select {
		case progress <- r.Params.Message:
		default:
		}
	}})
	mustOK(t, "write_file", call(t, cs, "write_file", map[string]any{"path": "tools/spin.ts", "content": spinTool}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "exec_tool", Arguments: map[string]any{"path": "tools/spin.ts", "args": map[string]any{"n": 1}}}
		p.SetProgressToken("spin")
		_, err := cs.CallTool(ctx, p)
		done <- err
	}()
	// Two notifications: the start, and one while it runs.
	for i := range 2 {
		select {
		case m := <-progress:
			if !strings.Contains(m, "tools/spin.ts") {
				t.Errorf("progress %d: %q", i, m)
			}
		case <-time.After(wait):
			t.Fatal("no progress notification")
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled call returned %v", err)
	}
	// The call ends cancelled (the server's log says so; the client no
	// longer reads its answer), and its run is unfinished: resumable, as
	// every cancelled run is.
	select {
	case kind := <-e.ended:
		if kind != mcpserver.KindCancelled {
			t.Errorf("the cancelled exec_tool ended %q", kind)
		}
	case <-time.After(wait):
		t.Fatal("the cancelled call did not end")
	}
	runs, err := e.rt.Journal().Unfinished()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Tool != "tools/spin.ts" {
		t.Errorf("unfinished runs %+v, want the spin run", runs)
	}
	// The session still works.
	mustOK(t, "list_files", call(t, cs, "list_files", map[string]any{"dir": "tools"}))
}

// riskyTool is valid and runs, but check_tool rates it high risk.
const riskyTool = `/** Doubles a number. @ignore-security */
export default function double(args: { n: number }): number {
  return args.n * 2;
}
`

// TestElicitation: a high-risk tool runs only when the client confirms;
// declined or without the elicitation capability, the call is refused.
func TestElicitation(t *testing.T) {
	e := newEnv(t, host.Config{})
	plain := e.connect(t, e.rt.Agent(), nil)
	mustOK(t, "write_file", call(t, plain, "write_file", map[string]any{"path": "tools/risky.ts", "content": riskyTool}))
	res := call(t, plain, "check_tool", map[string]any{"path": "tools/risky.ts"})
	if r := structured(t, res)["risk"]; r != "high" && r != "critical" {
		t.Fatalf("the risky tool's risk is %v: %s", r, text(res))
	}
	args := map[string]any{"path": "tools/risky.ts", "args": map[string]any{"n": 21}}
	res = call(t, plain, "exec_tool", args)
	if !res.IsError || !strings.HasPrefix(text(res), "confirmation: ") || !strings.Contains(text(res), "elicitation") {
		t.Errorf("without elicitation: %v %s", res.IsError, text(res))
	}
	var asked []string
	var mu sync.Mutex
	answer := func(action string) *mcp.ClientOptions {
		return &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, r.Params.Message)
			mu.Unlock()
			if action == "accept" {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
			}
			return &mcp.ElicitResult{Action: action}, nil
		}}
	}
	yes := e.connect(t, e.rt.Agent(), answer("accept"))
	res = call(t, yes, "exec_tool", args)
	if s := structured(t, res); res.IsError || s["result"] != 42.0 {
		t.Errorf("confirmed: %v %s", res.IsError, text(res))
	}
	res = call(t, yes, "risky", map[string]any{"n": 4})
	if got := mustOK(t, "risky", res); got != "8" {
		t.Errorf("risky confirmed = %q", got)
	}
	no := e.connect(t, e.rt.Agent(), answer("decline"))
	res = call(t, no, "risky", map[string]any{"n": 4})
	if !res.IsError || !strings.Contains(text(res), `"decline"`) {
		t.Errorf("declined: %v %s", res.IsError, text(res))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 3 || !strings.Contains(asked[0], "tools/risky.ts") {
		t.Errorf("the client was asked %q", asked)
	}
}

// TestHTTP: streamable HTTP on loopback: no token and a bad token are 401;
// a token of the node runs the session as a process with its grants.
func TestHTTP(t *testing.T) {
	e := newEnv(t, host.Config{})
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{}))
	defer hs.Close()
	endpoint := hs.URL + mcpserver.Path
	for _, auth := range []string{"", "Bearer nonsense", "Bearer " + forged(t)} {
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error string }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body.Error, "agentos token") {
			t.Errorf("Authorization %.20q: %d %q, want 401 saying how to get a token", auth, resp.StatusCode, body.Error)
		}
	}
	// A request a web page's script sends cross-origin is refused.
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Origin", "https://evil.example")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-origin request: %d, want 403", resp.StatusCode)
	}
	grants := []capability.Grant{{Right: capability.Read, Scope: "tools/"}, {Right: capability.Exec, Scope: "tools/"}}
	tok := e.rt.Kernel().Authority().Mint("mcp-test", grants, capability.Caveats{})
	if _, err := e.rt.Call(context.Background(), "write_file", mustJSON(map[string]string{"path": samples.FibPath, "content": samples.FibTool})); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: bearer{tok.Encode()}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	listed := listTools(t, cs)
	if listed["math_fib"] == nil || listed["exec_tool"] == nil {
		t.Fatalf("tools/list over HTTP: %v", keys(listed))
	}
	if got := mustOK(t, "math_fib", call(t, cs, "math_fib", map[string]any{"n": 10})); got != "55" {
		t.Errorf("math_fib = %q", got)
	}
	// The token grants no write: the process it runs as may not write.
	res := call(t, cs, "write_file", map[string]any{"path": "tools/x.ts", "content": "x"})
	if !res.IsError || !strings.HasPrefix(text(res), mcpserver.KindDenied+": ") {
		t.Errorf("write_file with a read/exec token: %v %s", res.IsError, text(res))
	}
	var mcpProcs int
	for _, p := range e.rt.Kernel().PS() {
		if p.Image == "mcp" {
			mcpProcs++
		}
	}
	if mcpProcs != 1 {
		t.Errorf("%d mcp processes, want 1 for the one token", mcpProcs)
	}
	// Another token cannot use this session.
	if sid := cs.ID(); sid != "" {
		other := e.rt.Kernel().Authority().Mint("mcp-other", grants, capability.Caveats{})
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+other.Encode())
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("another token on this session: %d, want 403", resp.StatusCode)
		}
	} else {
		t.Log("the Go client's session is stateless (no Mcp-Session-Id): nothing to hijack")
	}
	// A revoked token is refused from then on.
	e.rt.Kernel().Authority().Revoke(tok.ID)
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_files", Arguments: map[string]any{"dir": "tools"}}); err == nil {
		t.Error("a call with a revoked token was served")
	}
}

// TestHTTPAnonymous: with Anonymous set, a request without a token runs as
// that process.
func TestHTTPAnonymous(t *testing.T) {
	e := newEnv(t, host.Config{})
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{Anonymous: e.rt.Agent()}))
	defer hs.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "anon", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL + mcpserver.Path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	mustOK(t, "write_file", call(t, cs, "write_file", map[string]any{"path": samples.FibPath, "content": samples.FibTool}))
}

// forged is a token signed with another key.
func forged(t *testing.T) string {
	t.Helper()
	other, err := capability.NewAuthority(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return other.Mint("x", []capability.Grant{{Right: capability.Read}}, capability.Caveats{}).Encode()
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// TestForgeLive: forge_tool with a scripted model reports progress, and
// the forged tool appears live (list_changed) and runs under its name.
func TestForgeLive(t *testing.T) {
	args, _ := json.Marshal(map[string]string{"path": samples.FibPath, "code": samples.FibForged, "tests": samples.FibForgedTests})
	model := llmtest.NewServer([]llmtest.Step{{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "submit_tool", Arguments: string(args)}}}})
	defer model.Close()
	e := newEnv(t, host.Config{LLM: host.LLMConfig{BaseURL: model.URL(), Model: "scripted"}})
	ch := newChanges()
	var mu sync.Mutex
	var progress []string
	cs := e.connect(t, e.rt.Agent(), &mcp.ClientOptions{
		ToolListChangedHandler: ch.handler,
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, r.Params.Message)
			mu.Unlock()
		},
	})
	p := &mcp.CallToolParams{Name: "forge_tool", Arguments: map[string]any{"spec": "the n-th Fibonacci number"}}
	p.SetProgressToken(7)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if s := structured(t, res); res.IsError || s["path"] != samples.FibPath {
		t.Fatalf("forge_tool: %s (model: %v)", text(res), model.Err())
	}
	ch.until(t, "math_fib listed", func() bool { return listTools(t, cs)["math_fib"] != nil })
	if got := mustOK(t, "math_fib", call(t, cs, "math_fib", map[string]any{"n": 10})); got != "55" {
		t.Errorf("the forged math_fib(10) = %q", got)
	}
	// The start's and the end's notifications (the client may handle them
	// after the result: wait, bounded).
	deadline := time.Now().Add(wait)
	for {
		mu.Lock()
		got := slices.Clone(progress)
		mu.Unlock()
		if len(got) >= 2 && strings.HasPrefix(got[0], "forge_tool: started") && strings.Contains(got[len(got)-1], "done") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("forge_tool's progress: %q", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBridge: a client on one side of a Bridge sees the tools of the MCP
// server on the other (over streamable HTTP), live, with progress and the
// confirmation of a high-risk tool relayed.
func TestBridge(t *testing.T) {
	e := newEnv(t, host.Config{})
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{Anonymous: e.rt.Agent()}))
	defer hs.Close()
	clientT, serverT := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bridged := make(chan error, 1)
	go func() {
		bridged <- mcpserver.Bridge(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL + mcpserver.Path}, serverT, quiet)
	}()
	ch := newChanges()
	var mu sync.Mutex
	var asked, progress []string
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bridged", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: ch.handler,
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, r.Params.Message)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, r.Params.Message)
			mu.Unlock()
		},
	}).Connect(ctx, clientT, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}) // as Claude Desktop
	if err != nil {
		t.Fatal(err)
	}
	if got := listTools(t, cs); got["exec_tool"] == nil || got["math_fib"] != nil {
		t.Fatalf("bridged tools/list: %v", keys(got))
	}
	mustOK(t, "write_file", call(t, cs, "write_file", map[string]any{"path": samples.FibPath, "content": samples.FibTool}))
	ch.until(t, "math_fib listed through the bridge", func() bool { return listTools(t, cs)["math_fib"] != nil })
	p := &mcp.CallToolParams{Name: "math_fib", Arguments: map[string]any{"n": 10}}
	p.SetProgressToken("fib")
	res, err := cs.CallTool(ctx, p)
	if err != nil || text(res) != "55" {
		t.Fatalf("math_fib through the bridge: %v %v", err, res)
	}
	mustOK(t, "write_file", call(t, cs, "write_file", map[string]any{"path": "tools/risky.ts", "content": riskyTool}))
	ch.until(t, "risky listed", func() bool { return listTools(t, cs)["risky"] != nil })
	if got := mustOK(t, "risky", call(t, cs, "risky", map[string]any{"n": 21})); got != "42" {
		t.Errorf("the confirmed risky tool through the bridge = %q", got)
	}
	deadline := time.Now().Add(wait)
	for {
		mu.Lock()
		a, pr := len(asked), slices.Clone(progress)
		mu.Unlock()
		if a == 1 && slices.ContainsFunc(pr, func(m string) bool { return strings.HasPrefix(m, "tools/math/fib.ts: started") }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("through the bridge: %d confirmations asked (want 1), progress %q", a, pr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cs.Close()
	if err := <-bridged; err != nil {
		t.Errorf("the bridge ended with %v when its client left", err)
	}
}

// TestHTTPProcessKilled: a token's process killed ('agentos kill') ends its
// sessions' calls; the token's next session runs as a new process.
func TestHTTPProcessKilled(t *testing.T) {
	e := newEnv(t, host.Config{})
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{}))
	t.Cleanup(hs.Close) // after the sessions' Close (cleanups run last first)
	tok := e.rt.Kernel().Authority().Mint("mcp-test", []capability.Grant{{Right: capability.Read, Scope: "tools/"}}, capability.Caveats{})
	connect := func() *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "k", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: hs.URL + mcpserver.Path, HTTPClient: &http.Client{Transport: bearer{tok.Encode()}}},
			// A session (2025-11-25): a stateless client has no session to
			// lose, its next request runs as the token's new process.
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	mcpPIDs := func() []kernel.PID {
		var out []kernel.PID
		for _, p := range e.rt.Kernel().PS() {
			if p.Image == "mcp" {
				out = append(out, p.PID)
			}
		}
		return out
	}
	cs := connect()
	mustOK(t, "list_files", call(t, cs, "list_files", map[string]any{"dir": "tools"}))
	first := mcpPIDs()
	if len(first) != 1 {
		t.Fatalf("mcp processes %v, want 1", first)
	}
	if err := e.rt.Kernel().Kill(first[0], "test"); err != nil {
		t.Fatal(err)
	}
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_files", Arguments: map[string]any{"dir": "tools"}}); err == nil && !res.IsError {
		t.Error("a call of a killed process's session succeeded")
	}
	cs2 := connect()
	mustOK(t, "list_files", call(t, cs2, "list_files", map[string]any{"dir": "tools"}))
	if now := mcpPIDs(); len(now) != 1 || now[0] == first[0] {
		t.Errorf("mcp processes after the kill: %v (the killed one was %v)", now, first[0])
	}
}

// TestElicitationIsApproval: a confirmation over MCP by a client holding
// the approve right is recorded as the version's approval at the approval
// gate (who: the MCP client); a version
// denied at the gate is refused without asking.
func TestElicitationIsApproval(t *testing.T) {
	e := newEnv(t, host.Config{})
	var asked int
	var mu sync.Mutex
	approver := clientProc(t, e, "approver", capability.Grant{Right: capability.Read, Scope: "tools/"}, capability.Grant{Right: capability.Write, Scope: "tools/"},
		capability.Grant{Right: capability.Exec, Scope: "tools/"}, capability.Grant{Right: capability.Approve, Scope: "tools/"})
	yes := e.connect(t, approver, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		asked++
		mu.Unlock()
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
	}})
	mustOK(t, "write_file", call(t, yes, "write_file", map[string]any{"path": "tools/risky.ts", "content": riskyTool}))
	args := map[string]any{"path": "tools/risky.ts", "args": map[string]any{"n": 21}}
	if res := call(t, yes, "exec_tool", args); res.IsError || structured(t, res)["result"] != 42.0 {
		t.Fatalf("confirmed: %s", text(res))
	}
	rs, err := e.rt.Approvals(approval.StateApproved)
	if err != nil || len(rs) != 1 || rs[0].Path != "tools/risky.ts" || !strings.HasPrefix(rs[0].DecidedBy, "mcp:") {
		t.Fatalf("the confirmation's approval: %+v %v", rs, err)
	}
	// Denied at the gate (its current version, by path): MCP refuses it
	// without asking.
	if _, err := e.rt.Deny("tools/risky.ts", host.ApproveOptions{Reason: "it hides things"}); err != nil {
		t.Fatal(err)
	}
	res := call(t, yes, "exec_tool", args)
	if !res.IsError || !strings.Contains(text(res), "denied at the approval gate") || !strings.Contains(text(res), "it hides things") {
		t.Errorf("denied version over MCP: %s", text(res))
	}
	mu.Lock()
	defer mu.Unlock()
	if asked != 1 {
		t.Errorf("the client was asked %d times, want once", asked)
	}
}
