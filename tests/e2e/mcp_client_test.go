package e2e_test

import (
	"context"
	"encoding/json"
	"github.com/agentos-run/agentos/actors/executor"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/mcptest"
	"github.com/agentos-run/agentos/kerneltools"
)

// fileBugTool calls two tools of the MCP server "tracker" as code: one
// answers structuredContent, the other an isError result the tool catches.
const fileBugTool = `import createIssue from "/mcp/tracker/create_issue";
import fail from "/mcp/tracker/fail";
import echo from "/mcp/tracker/echo";

/** Files a bug in the tracker and reports its number; a tracker failure is caught. */
export default async function (a: { title: string }): Promise<string> {
  const issue = await createIssue({ title: a.title, labels: ["bug"] });
  let refused = "";
  try {
    await fail({ reason: "the tracker is read-only" });
  } catch (e) {
    refused = (e as { code: string }).code + ": " + (e as Error).message;
  }
  const said = await echo({ message: a.title });
  return "#" + issue.number + " " + issue.url + " | " + refused + " | " + JSON.stringify(said);
}
`

// browseTool walks /mcp from inside the sandbox (tgp.list_files/read_file).
const browseTool = `/** Lists the MCP servers and the tracker's tools, and reads one module. */
export default async function (): Promise<string> {
  const servers: string[] = await tgp.list_files("/mcp");
  const tools: string[] = await tgp.list_files("/mcp/tracker");
  const src: string = await tgp.read_file("/mcp/tracker/add.ts");
  return servers.join(",") + " | " + tools.join(",") + " | " + src.includes("export interface AddInput");
}
`

func mcpExec(t *testing.T, rt *host.Runtime, p *kernel.Process, path string, args any) kerneltools.ExecResult {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"path": path, "args": args})
	out, err := rt.Node().Call(context.Background(), p, "exec_tool", b)
	if err != nil {
		t.Fatalf("exec_tool %s: %v", path, err)
	}
	var res kerneltools.ExecResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func kcall(t *testing.T, rt *host.Runtime, p *kernel.Process, tool string, args any) (json.RawMessage, error) {
	t.Helper()
	b, _ := json.Marshal(args)
	return rt.Node().Call(context.Background(), p, tool, b)
}

// MCP servers as code, end to end: a tool requires /mcp/tracker/... and
// calls a real MCP server (Go SDK, streamable HTTP on loopback) through the
// journaled mcp driver, under the mcp right; the agent discovers the tools
// with list_files, read_file and search_tools; and the recorded run
// replays in a new runtime with the server stopped, with the same result.
func TestMCPToolsAsCode(t *testing.T) {
	srv := mcptest.StartHTTP(t, "")
	root := t.TempDir()
	cfg := host.Config{Root: root, Isolation: "inprocess", Logger: quiet,
		MCP: host.MCPConfig{Servers: map[string]host.MCPServerConfig{"tracker": {URL: srv.URL}}}}
	rt, err := host.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			rt.Close()
		}
	})
	write(t, rt, "tools/file_bug.ts", fileBugTool)
	write(t, rt, "tools/browse.ts", browseTool)

	// check_tool accepts /mcp requires.
	out, err := rt.Call(context.Background(), "check_tool", json.RawMessage(`{"path":"tools/file_bug.ts"}`))
	if err != nil || !strings.Contains(string(out), `"valid":true`) {
		t.Fatalf("check_tool: %s %v", out, err)
	}

	before := mcptest.Calls.Load()
	res := mcpExec(t, rt, rt.Agent(), "tools/file_bug.ts", map[string]string{"title": "login fails"})
	// JSON.stringify of a content answer: the same text live and replayed.
	const want = `"#1 https://tracker.example/issues/1 | mcp_tool_error: tracker/fail: the tracker is read-only | [{\"text\":\"echo: login fails\",\"type\":\"text\"}]"`
	if !res.Success || string(res.Result.Result) != want {
		t.Fatalf("file_bug: %+v %+v", res.Result, res.Error)
	}
	if got := mcptest.Calls.Load() - before; got != 3 {
		t.Fatalf("the server answered %d calls, want 3", got)
	}

	// The sandbox sees /mcp too.
	res2 := mcpExec(t, rt, rt.Agent(), "tools/browse.ts", map[string]string{})
	if !res2.Success || string(res2.Result.Result) != `"/mcp/tracker/ | /mcp/tracker/add.ts,/mcp/tracker/create_issue.ts,/mcp/tracker/echo.ts,/mcp/tracker/exit.ts,/mcp/tracker/fail.ts | true"` {
		t.Fatalf("browse: %+v %+v", res2.Result, res2.Error)
	}

	// Rights: no mcp right, or one on another tool only: refused, and the
	// server never sees the call.
	spawn := func(grants ...capability.Grant) *kernel.Process {
		p, err := rt.Kernel().Spawn(func(ctx context.Context, _ *kernel.Process) error { <-ctx.Done(); return nil }, kernel.SpawnOptions{Grants: grants})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	exec := capability.Grant{Right: capability.Exec, Scope: "tools/"}
	read := capability.Grant{Right: capability.Read, Scope: "tools/"}
	before = mcptest.Calls.Load()
	for _, p := range []*kernel.Process{spawn(exec, read), spawn(exec, read, capability.Grant{Right: capability.MCP, Scope: "tracker/fail"})} {
		res := mcpExec(t, rt, p, "tools/file_bug.ts", map[string]string{"title": "x"})
		if res.Success || res.Error == nil || !strings.Contains(res.Error.Message, `"mcp" right`) || !strings.Contains(res.Error.Message, "tracker/create_issue") {
			t.Fatalf("a call without the mcp right: %+v %+v", res.Result, res.Error)
		}
	}
	if got := mcptest.Calls.Load() - before; got != 0 {
		t.Fatalf("refused calls reached the server %d times", got)
	}

	// Quota: each mcp call is one tool call, charged to the caller like a
	// kernel tool call; the exec_tool that runs the tool is one more.
	mcpAll := capability.Grant{Right: capability.MCP, Scope: "tracker/"}
	metered, err := rt.Kernel().Spawn(func(ctx context.Context, _ *kernel.Process) error { <-ctx.Done(); return nil }, kernel.SpawnOptions{Grants: []capability.Grant{exec, read, mcpAll}, Quota: capability.Limits{capability.ToolCalls: 100}})
	if err != nil {
		t.Fatal(err)
	}
	used := metered.Account().Used(capability.ToolCalls)
	if res := mcpExec(t, rt, metered, "tools/file_bug.ts", map[string]string{"title": "x"}); !res.Success {
		t.Fatalf("file_bug as a metered process: %+v", res.Error)
	}
	if got := metered.Account().Used(capability.ToolCalls) - used; got != 4 {
		t.Fatalf("exec_tool of a tool making 3 mcp calls charged %v tool_calls, want 4 (1 + 3)", got)
	}
	// A quota that covers the exec_tool and one mcp call: the second call
	// is refused before it reaches the server.
	tight, err := rt.Kernel().Spawn(func(ctx context.Context, _ *kernel.Process) error { <-ctx.Done(); return nil }, kernel.SpawnOptions{Grants: []capability.Grant{exec, read, mcpAll}, Quota: capability.Limits{capability.ToolCalls: 2}})
	if err != nil {
		t.Fatal(err)
	}
	before = mcptest.Calls.Load()
	res3 := mcpExec(t, rt, tight, "tools/file_bug.ts", map[string]string{"title": "x"})
	if res3.Success || mcptest.Calls.Load()-before != 1 {
		t.Fatalf("a tool over its tool_calls quota: %+v %+v, the server saw %d calls, want 1", res3.Result, res3.Error, mcptest.Calls.Load()-before)
	}

	// Progressive disclosure through the kernel tools.
	agent := rt.Agent()
	if out, err := kcall(t, rt, agent, "list_files", map[string]string{"dir": "/mcp"}); err != nil || string(out) != `["/mcp/tracker/"]` {
		t.Fatalf("list_files /mcp: %s %v", out, err)
	}
	if out, err := kcall(t, rt, agent, "list_files", map[string]string{"dir": "/mcp/tracker"}); err != nil || !strings.Contains(string(out), `"/mcp/tracker/create_issue.ts"`) {
		t.Fatalf("list_files /mcp/tracker: %s %v", out, err)
	}
	out, err = kcall(t, rt, agent, "read_file", map[string]string{"path": "/mcp/tracker/create_issue.ts"})
	var src string
	_ = json.Unmarshal(out, &src)
	if err != nil || !strings.Contains(src, "export interface CreateIssueInput") || !strings.Contains(src, "Create an issue in the tracker.") {
		t.Fatalf("read_file: %s %v", src, err)
	}
	out, err = kcall(t, rt, agent, "search_tools", map[string]any{"query": "create an issue in the tracker", "limit": 3})
	var hits []kerneltools.SearchHit
	_ = json.Unmarshal(out, &hits)
	if err != nil || len(hits) == 0 || hits[0].Path != "/mcp/tracker/create_issue.ts" || hits[0].Score <= 0 {
		t.Fatalf("search_tools: %s %v", out, err)
	}
	// A process with the mcp right on one tool sees only that tool.
	narrow := spawn(capability.Grant{Right: capability.MCP, Scope: "tracker/echo"})
	if out, err := kcall(t, rt, narrow, "list_files", map[string]string{"dir": "/mcp/tracker"}); err != nil || string(out) != `["/mcp/tracker/echo.ts"]` {
		t.Fatalf("narrow list_files: %s %v", out, err)
	}
	if _, err := kcall(t, rt, narrow, "read_file", map[string]string{"path": "/mcp/tracker/add.ts"}); err == nil || !strings.Contains(err.Error(), "mcp") {
		t.Fatalf("narrow read_file of another tool: %v", err)
	}
	if _, err := kcall(t, rt, spawn(read), "list_files", map[string]string{"dir": "/mcp"}); err == nil {
		t.Fatal("list_files /mcp without any mcp right was allowed")
	}

	// The tool lists are cached, 0600.
	if fi, err := os.Stat(filepath.Join(root, host.MCPCacheDir, "tracker.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the cache: %v %v", fi, err)
	}

	// Offline replay: the server stopped, a new runtime on the same root.
	srv.Close()
	closed = true
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	rt2 := start(t, cfg)
	before = mcptest.Calls.Load()
	rep, err := executor.Replay(context.Background(), rt2.Executor(), rt2.Journal(), res.RunID, nil)
	if err != nil || !rep.Same || string(rep.Result.Result) != want {
		t.Fatalf("offline replay: %+v %v", rep, err)
	}
	if mcptest.Calls.Load() != before {
		t.Fatal("the replay called the server")
	}
	// Discovery works offline too, from the cache.
	if out, err := rt2.Call(context.Background(), "list_files", json.RawMessage(`{"dir":"/mcp/tracker"}`)); err != nil || !strings.Contains(string(out), `"/mcp/tracker/create_issue.ts"`) {
		t.Fatalf("offline list_files: %s %v", out, err)
	}
	out, err = rt2.Call(context.Background(), "search_tools", json.RawMessage(`{"query":"create an issue in the tracker","limit":1}`))
	if err != nil || !strings.Contains(string(out), `"path":"/mcp/tracker/create_issue.ts"`) {
		t.Fatalf("offline search_tools: %s %v", out, err)
	}
}

// mcp.servers is validated when agentos.json is loaded, with errors that
// say what to write instead.
func TestMCPServerConfigValidation(t *testing.T) {
	for _, tc := range []struct{ servers, want string }{
		{`{"gh": {"command": ["gh-mcp"], "env": ["GITHUB_TOKEN"], "dir": "servers", "timeout": "10s"}, "web": {"url": "https://mcp.example.com/mcp", "token_env": "WEB_TOKEN"}}`, ""},
		{`{"gh": {}}`, "neither command nor url"},
		{`{"gh": {"command": ["x"], "url": "https://h/mcp"}}`, "both command and url"},
		{`{"gh": {"command": ["x"], "env": ["GITHUB_TOKEN=ghp_123"]}}`, "never put its value in the configuration"},
		{`{"gh": {"url": "https://user:pw@h/mcp"}}`, "token_env"},
		{`{"web": {"url": "http://mcp.example.com/mcp", "token_env": "WEB_TOKEN"}}`, "use https://"},
		{`{"web": {"url": "http://127.0.0.1:8765/mcp", "token_env": "WEB_TOKEN"}}`, ""},
		{`{"gh": {"command": ["x"], "dir": "../elsewhere"}}`, "inside the tool root"},
		{`{"a/b": {"command": ["x"]}}`, "server name"},
		{`{"gh": {"command": ["x"], "token": "abc"}}`, "token"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, host.ConfigFile), []byte(`{"mcp": {"servers": `+tc.servers+`}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := host.LoadConfig(dir)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.servers, err, tc.want)
		}
	}
}
