package e2e_test

import (
	"context"
	"github.com/agentos-run/agentos/actors/executor"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/mcptest"
)

// mcpProbeTool reports what /mcp shows from inside the sandbox, each step's
// refusal as its error code.
const mcpProbeTool = `async function step(f: () => Promise<unknown>): Promise<string> {
  try {
    return JSON.stringify(await f());
  } catch (e) {
    return "refused:" + (e as { code: string }).code;
  }
}

/** Lists /mcp and /mcp/<server>, and reads one module of the tracker. */
export default async function (a: { server: string }): Promise<string> {
  return [
    await step(() => tgp.list_files("/mcp")),
    await step(() => tgp.list_files("/mcp/" + a.server)),
    await step(async () => (await tgp.read_file("/mcp/tracker/add.ts")).length > 0),
  ].join(" | ");
}
`

// requireTool requires a module of the tracker.
const requireTool = `import add from "/mcp/tracker/add";

/** Adds through the tracker's add. */
export default async function (): Promise<number> {
  return (await add({ a: 1, b: 2 })).sum;
}
`

// Review 14 item 5: inside the sandbox, /mcp honours the caller's mcp
// right exactly as the kernel's list_files and read_file do: a caller
// without it sees no server, cannot list, read or require a module, and no
// server is started for it; a caller with the right on one tool sees that
// tool only.
func TestMCPSandboxHonoursTheMCPRight(t *testing.T) {
	srv := mcptest.StartHTTP(t, "")
	root := t.TempDir()
	marker := filepath.Join(t.TempDir(), "local-started")
	cfg := host.Config{Root: root, Isolation: "inprocess", Logger: quiet,
		MCP: host.MCPConfig{Servers: map[string]host.MCPServerConfig{
			"tracker": {URL: srv.URL},
			// Started, it leaves the marker (and exits: it is no server).
			"local": {Command: []string{"sh", "-c", "touch '" + marker + "'; exit 1"}},
		}}}
	rt := start(t, cfg)
	write(t, rt, "tools/probe.ts", mcpProbeTool)
	write(t, rt, "tools/req.ts", requireTool)
	spawn := func(grants ...capability.Grant) *kernel.Process {
		p, err := rt.Kernel().Spawn(func(ctx context.Context, _ *kernel.Process) error { <-ctx.Done(); return nil }, kernel.SpawnOptions{Grants: grants})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	exec := capability.Grant{Right: capability.Exec, Scope: "tools/"}
	read := capability.Grant{Right: capability.Read, Scope: "tools/"}

	before := mcptest.Calls.Load()
	none := spawn(exec, read)
	for _, server := range []string{"tracker", "local"} {
		res := mcpExec(t, rt, none, "tools/probe.ts", map[string]string{"server": server})
		if want := `"[] | refused:security | refused:security"`; !res.Success || string(res.Result.Result) != want {
			t.Fatalf("a caller without the mcp right, /mcp/%s: %s %+v, want %s", server, res.Result.Result, res.Error, want)
		}
	}
	res := mcpExec(t, rt, none, "tools/req.ts", map[string]string{})
	if res.Success || res.Error == nil || !strings.Contains(res.Error.Message, "tracker/add") || !strings.Contains(res.Error.Message, "mcp") {
		t.Fatalf("a require without the mcp right: %s %+v", res.Result.Result, res.Error)
	}

	echoOnly := spawn(exec, read, capability.Grant{Right: capability.MCP, Scope: "tracker/echo"})
	res = mcpExec(t, rt, echoOnly, "tools/probe.ts", map[string]string{"server": "tracker"})
	if want := `"[\"/mcp/tracker/\"] | [\"/mcp/tracker/echo.ts\"] | refused:security"`; !res.Success || string(res.Result.Result) != want {
		t.Fatalf("a caller with the mcp right on tracker/echo: %s %+v, want %s", res.Result.Result, res.Error, want)
	}
	res = mcpExec(t, rt, echoOnly, "tools/probe.ts", map[string]string{"server": "local"})
	if want := `"[\"/mcp/tracker/\"] | refused:security | refused:security"`; !res.Success || string(res.Result.Result) != want {
		t.Fatalf("a caller with the mcp right on tracker/echo, /mcp/local: %s %+v, want %s", res.Result.Result, res.Error, want)
	}

	// search_tools reads (and may start) only the servers the caller reaches.
	if out, err := kcall(t, rt, echoOnly, "search_tools", map[string]any{"query": "echo a message", "limit": 5}); err != nil || !strings.Contains(string(out), "/mcp/tracker/echo.ts") || strings.Contains(string(out), "/mcp/tracker/add.ts") {
		t.Fatalf("search_tools with the mcp right on tracker/echo: %s %v", out, err)
	}

	addOnly := spawn(exec, read, capability.Grant{Right: capability.MCP, Scope: "tracker/add"})
	res = mcpExec(t, rt, addOnly, "tools/req.ts", map[string]string{})
	if !res.Success || string(res.Result.Result) != "3" {
		t.Fatalf("a require with the mcp right on tracker/add: %s %+v", res.Result.Result, res.Error)
	}
	if got := mcptest.Calls.Load() - before; got != 1 {
		t.Fatalf("the tracker answered %d tool calls, want 1 (the permitted add)", got)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the stdio server no caller may use was started (%v)", err)
	}
}

// Review 14 item 6: a recorded run replays with its server gone from
// mcp.servers and the tool list cache deleted (its modules are made from
// their paths alone); and with a server of that name configured but no
// cache, the replay starts no server.
func TestMCPReplayNeedsNoServerNorCache(t *testing.T) {
	srv := mcptest.StartHTTP(t, "")
	root := t.TempDir()
	cfg := host.Config{Root: root, Isolation: "inprocess", Logger: quiet,
		MCP: host.MCPConfig{Servers: map[string]host.MCPServerConfig{"tracker": {URL: srv.URL}}}}
	rt, err := host.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	write(t, rt, "tools/file_bug.ts", fileBugTool)
	res := mcpExec(t, rt, rt.Agent(), "tools/file_bug.ts", map[string]string{"title": "login fails"})
	if !res.Success {
		t.Fatalf("file_bug: %+v", res.Error)
	}
	want := string(res.Result.Result)
	srv.Close()
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, host.MCPCacheDir)); err != nil {
		t.Fatal(err)
	}

	marker := filepath.Join(t.TempDir(), "tracker-started")
	for _, tc := range []struct {
		name    string
		servers map[string]host.MCPServerConfig
	}{
		{"no server configured", nil},
		{"a server that must not start", map[string]host.MCPServerConfig{"tracker": {Command: []string{"sh", "-c", "touch '" + marker + "'; exit 1"}}}},
	} {
		c := cfg
		c.MCP = host.MCPConfig{Servers: tc.servers}
		rt2, err := host.Start(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		before := mcptest.Calls.Load()
		rep, err := executor.Replay(context.Background(), rt2.Executor(), rt2.Journal(), res.RunID, nil)
		if err != nil || !rep.Same || string(rep.Result.Result) != want {
			t.Fatalf("%s: replay: %+v %v", tc.name, rep, err)
		}
		if mcptest.Calls.Load() != before {
			t.Fatalf("%s: the replay called the server", tc.name)
		}
		if _, err := os.Stat(marker); !os.IsNotExist(err) {
			t.Fatalf("%s: the replay started the server (%v)", tc.name, err)
		}
		if err := rt2.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
