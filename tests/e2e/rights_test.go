package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/internal/testutil"
	"github.com/agentos-run/agentos/kerneltools"
	"github.com/agentos-run/agentos/vfs"
)

// probeTool does one file, list or fetch operation named by its arguments,
// so that each attack is one exec_tool of the same tool.
const probeTool = `/** Does one tgp operation named by its arguments (a probe for the sandbox's rules). */
export default async function (a: { op: string; path: string }): Promise<string> {
  if (a.op === "read") return await tgp.read_file(a.path);
  if (a.op === "list") return JSON.stringify(await tgp.list_files(a.path));
  if (a.op === "write") { await tgp.write_file(a.path, "pwned by a tool"); return "written"; }
  if (a.op === "tmp") { await tgp.write_file(a.path, "scratch"); return await tgp.read_file(a.path); }
  if (a.op === "fetch") { const r = await tgp.fetch(a.path, {}); return r.status + " " + r.body; }
  return "unknown op " + a.op;
}
`

// writeFiles writes files under root, creating directories.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// execAs runs exec_tool for p and returns the run's result; a kernel
// refusal (no exec right) is returned as the error.
func execAs(t *testing.T, rt *host.Runtime, p *kernel.Process, tool string, args any) (kerneltools.ExecResult, error) {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{"path": tool, "args": args})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := rt.Node().Call(ctx, p, "exec_tool", raw)
	if err != nil {
		return kerneltools.ExecResult{}, err
	}
	var res kerneltools.ExecResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("exec_tool %s: %s (%v)", tool, out, err)
	}
	return res, nil
}

func blockUntilDone(ctx context.Context, _ *kernel.Process) error { <-ctx.Done(); return nil }

// Issue 10 item 4: a process holding read/exec on tools/pub/ and fetch on
// <server>/v1/ ran one tool of tools/pub/ that read agentos.json,
// secrets.env and tools/priv/*, required and ran code from tools/priv/,
// wrote into a write_dirs directory it has no write right on, and fetched
// /v1/../admin. A tool runs with exactly its caller's rights (intersected
// with the node's configuration): every one of those is now refused, with a
// security error naming the path and the right, in real worker processes;
// the same calls made directly are refused too.
func TestToolRunsWithItsCallersRights(t *testing.T) {
	var mu sync.Mutex
	var hits []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.URL.Path)
		mu.Unlock()
		_, _ = w.Write([]byte("served " + r.URL.Path))
	}))
	defer srv.Close()
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"agentos.json":           `{"isolation": "process", "fetch": {"allow": ["` + srv.URL + `/"]}}`,
		"secrets.env":            "API_KEY=sk-live-do-not-leak\n",
		"tools/priv/secret.ts":   "/** Private. */\nexport default function (): string { return \"PRIV-RAN: \" + \"k-123\"; }\n",
		"tools/pub/helper.ts":    "/** A public helper. */\nexport default function (): string { return \"helper ok\"; }\n",
		"tools/pub/probe.ts":     probeTool,
		"tools/pub/usehelper.ts": "import helper from './helper';\n/** Uses a sibling. */\nexport default function (): string { return helper(); }\n",
		"tools/pub/req.ts":       "import secret from '../priv/secret';\n/** Requires a private tool. */\nexport default function (): string { return secret(); }\n",
		"tools/pub/reqlib.ts":    "import secret from '/lib/priv/secret';\n/** Requires a private tool through /lib. */\nexport default function (): string { return secret(); }\n",
		"out/.keep":              "",
	})
	rt := start(t, host.Config{Root: root, Isolation: "process", WriteDirs: []string{"out"}, Fetch: host.FetchConfig{Allow: []string{srv.URL + "/"}}})
	caller, err := rt.Kernel().Spawn(blockUntilDone, kernel.SpawnOptions{Name: "pub-only", Grants: []capability.Grant{
		{Right: capability.Read, Scope: "tools/pub/"},
		{Right: capability.Exec, Scope: "tools/pub/"},
		{Right: capability.Fetch, Scope: srv.URL + "/v1/"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	probe := func(op, path string) kerneltools.ExecResult {
		t.Helper()
		res, err := execAs(t, rt, caller, "tools/pub/probe.ts", map[string]string{"op": op, "path": path})
		if err != nil {
			t.Fatalf("exec_tool probe %s %s: %v", op, path, err)
		}
		return res
	}

	// What the caller may do, a tool it runs may do.
	for _, ok := range []struct{ op, path, want string }{
		{"read", "/lib/pub/helper.ts", "helper ok"},
		{"read", "tools/pub/helper.ts", "helper ok"},
		{"list", "/lib/pub", `/lib/pub/helper.ts`},
		{"list", "tools/pub", `tools/pub/probe.ts`},
		{"tmp", "/tmp/scratch.txt", "scratch"},
		{"fetch", srv.URL + "/v1/prices", "200 served /v1/prices"},
	} {
		res := probe(ok.op, ok.path)
		if !res.Success || !strings.Contains(string(res.Result.Result), ok.want) {
			t.Errorf("%s %s (granted): %s %+v", ok.op, ok.path, res.Result.Result, res.Error)
		}
	}
	if res, err := execAs(t, rt, caller, "tools/pub/usehelper.ts", struct{}{}); err != nil || !res.Success || string(res.Result.Result) != `"helper ok"` {
		t.Errorf("require of a sibling the caller may read: %+v %v", res, err)
	}

	// Every attack of the issue, one exec_tool each.
	for _, bad := range []struct{ op, path, right, names string }{
		{"read", "agentos.json", "read", "agentos.json"},
		{"read", "secrets.env", "read", "secrets.env"},
		{"read", "tools/priv/secret.ts", "read", "tools/priv/secret.ts"},
		{"read", "/lib/priv/secret.ts", "read", "tools/priv/secret.ts"},
		{"list", "tools/priv", "read", "tools/priv/"},
		{"list", "/lib/priv", "read", "tools/priv/"},
		{"list", "/lib", "read", "tools/"},
		{"list", ".", "read", `""`},
		{"write", "out/report.txt", "write", "out/report.txt"},
		{"fetch", srv.URL + "/v1/../admin/secret.txt", "fetch", "/admin/secret.txt"},
		{"fetch", srv.URL + "/v1/%2e%2e/admin/secret.txt", "fetch", "/admin/secret.txt"},
		{"fetch", srv.URL + "/admin/secret.txt", "fetch", "/admin/secret.txt"},
	} {
		res := probe(bad.op, bad.path)
		if res.Success || res.Error == nil {
			t.Errorf("%s %s: the tool did it: %s", bad.op, bad.path, res.Result.Result)
			continue
		}
		if res.Error.Code != "security" {
			t.Errorf("%s %s: code %q, want security (%s)", bad.op, bad.path, res.Error.Code, res.Error.Message)
		}
		if bad.right != "" && !strings.Contains(res.Error.Message, `"`+bad.right+`" right`) {
			t.Errorf("%s %s: the refusal does not name the %q right: %s", bad.op, bad.path, bad.right, res.Error.Message)
		}
		if !strings.Contains(res.Error.Message, bad.names) {
			t.Errorf("%s %s: the refusal does not name %s: %s", bad.op, bad.path, bad.names, res.Error.Message)
		}
		for _, secret := range []string{"sk-live", "PRIV-RAN", `"isolation"`} {
			if strings.Contains(res.Error.Message+string(res.Result.Result), secret) {
				t.Errorf("%s %s leaked %q: %s", bad.op, bad.path, secret, res.Error.Message)
			}
		}
	}
	for _, tool := range []string{"tools/pub/req.ts", "tools/pub/reqlib.ts"} {
		res, err := execAs(t, rt, caller, tool, struct{}{})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if res.Success || res.Error == nil || res.Error.Code != "security" || !strings.Contains(res.Error.Message, "tools/priv/secret.ts") || !strings.Contains(res.Error.Message, `"read" right`) {
			t.Errorf("%s required tools/priv/secret.ts: %s %+v", tool, res.Result.Result, res.Error)
		}
		if strings.Contains(string(res.Result.Result), "PRIV-RAN") {
			t.Errorf("%s ran code from tools/priv/", tool)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "out", "report.txt")); err == nil {
		t.Error("out/report.txt was written by a caller without the write right")
	}
	mu.Lock()
	for _, h := range hits {
		if strings.Contains(h, "admin") {
			t.Errorf("the server was asked %s", h)
		}
	}
	mu.Unlock()

	// The same calls made directly are refused.
	for _, direct := range []struct{ tool, args string }{
		{"read_file", `{"path":"agentos.json"}`},
		{"read_file", `{"path":"secrets.env"}`},
		{"read_file", `{"path":"tools/priv/secret.ts"}`},
		{"list_files", `{"dir":"tools/priv"}`},
		{"list_files", `{"dir":"."}`},
		{"write_file", `{"path":"out/report.txt","content":"x"}`},
		{"exec_tool", `{"path":"tools/priv/secret.ts"}`},
	} {
		if out, err := rt.Node().Call(context.Background(), caller, direct.tool, json.RawMessage(direct.args)); !errors.Is(err, capability.ErrDenied) {
			t.Errorf("direct %s %s: %s, %v; want capability.ErrDenied", direct.tool, direct.args, out, err)
		}
	}
}

// Issue 10 item 3, end to end in worker processes: links inside the root
// (as an upstream commit or a local user could leave them) never lead a
// tool or a kernel tool to .agentos, .git or agentos.json, and a hard link
// is never read.
func TestLinksNeverReachStateEndToEnd(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"agentos.json":    `{"write_dirs": ["out"]}`,
		".git/config":     "[remote \"origin\"]\n\turl = https://user:token@example.com/x.git\n",
		"tools/probe.ts":  probeTool,
		"out/.keep":       "",
		"tools/ok/one.ts": "/** One. */\nexport default function (): number { return 1; }\n",
	})
	rt := start(t, host.Config{Root: root, Isolation: "process", WriteDirs: []string{"out"}})
	journalDB := filepath.Join(root, ".agentos", "journal.db")
	for link, target := range map[string]string{
		"tools/state": "../.agentos",
		"tools/g":     "../.git",
		"tools/cfg":   "../agentos.json",
		"out/up":      "..",
		"tools/one":   "ok/one.ts", // stays where it may: followed
	} {
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(journalDB, filepath.Join(root, "tools", "j.db")); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(root, "agentos.json"))
	probe := func(op, path string) kerneltools.ExecResult {
		t.Helper()
		res, err := execAs(t, rt, rt.Agent(), "tools/probe.ts", map[string]string{"op": op, "path": path})
		if err != nil {
			t.Fatalf("exec_tool probe %s %s: %v", op, path, err)
		}
		return res
	}
	for _, bad := range []struct{ op, path string }{
		{"read", "/lib/state/journal.db"},
		{"read", "/lib/state/data.db"},
		{"read", "tools/state/journal.db"},
		{"read", "/lib/g/config"},
		{"read", "/lib/cfg"},
		{"read", "/lib/j.db"},
		{"read", "out/up/agentos.json"},
		{"read", "out/up/.git/config"},
		{"write", "out/up/agentos.json"},
		{"write", "out/up/tools/evil.ts"},
		{"write", "out/up/.agentos/journal.db"},
		{"write", "out/up/out/up/tools/evil.ts"},
		{"list", "tools/state"},
		{"list", "out/up"},
	} {
		res := probe(bad.op, bad.path)
		if res.Success || res.Error == nil || res.Error.Code != "security" {
			t.Errorf("%s %s: %s %+v; want a security error", bad.op, bad.path, res.Result.Result, res.Error)
		}
	}
	res := probe("list", "/lib")
	if !res.Success {
		t.Fatalf("list /lib: %+v", res.Error)
	}
	for _, hidden := range []string{"state", "/lib/g", "cfg", "j.db", "journal"} {
		if strings.Contains(string(res.Result.Result), hidden) {
			t.Errorf("list /lib shows %s: %s", hidden, res.Result.Result)
		}
	}
	// The default process holds write on its write directories, so its
	// tools write there, through a link too when it leads inside one.
	if err := os.Symlink("sub", filepath.Join(root, "out", "alias")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"out/ok.txt", "out/alias/ok.txt"} {
		if res := probe("write", p); !res.Success {
			t.Errorf("write %s (a write directory): %+v", p, res.Error)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "out", "sub", "ok.txt")); err != nil || string(b) != "pwned by a tool" {
		t.Errorf("out/alias/ok.txt did not land in out/sub: %q %v", b, err)
	}
	if res := probe("read", "/lib/one"); !res.Success || !strings.Contains(string(res.Result.Result), "One.") {
		t.Errorf("a link inside /lib to a tool: %+v", res)
	}
	if res, err := execAs(t, rt, rt.Agent(), "tools/one", struct{}{}); err != nil || !res.Success || string(res.Result.Result) != "1" {
		t.Errorf("exec_tool through a link inside tools/: %+v %v", res, err)
	}

	// The kernel tools, for a process allowed everything, through the same links.
	admin, err := rt.Kernel().Spawn(blockUntilDone, kernel.SpawnOptions{Name: "admin", Grants: []capability.Grant{{Right: capability.Read}, {Right: capability.Write}, {Right: capability.Exec}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tool, args string }{
		{"read_file", `{"path":"tools/state/journal.db"}`},
		{"read_file", `{"path":"tools/g/config"}`},
		{"read_file", `{"path":"tools/cfg"}`},
		{"read_file", `{"path":"tools/j.db"}`},
		{"read_file", `{"path":"out/up/agentos.json"}`},
		{"check_tool", `{"path":"tools/state/journal.db"}`},
		{"list_files", `{"dir":"tools/state"}`},
		{"write_file", `{"path":"tools/state/evil.txt","content":"x"}`},
		{"write_file", `{"path":"out/up/agentos.json","content":"{}"}`},
		{"write_file", `{"path":"tools/cfg","content":"{}"}`},
		{"patch_file", `{"path":"tools/cfg","search":"out","replace":"."}`},
		{"patch_file", `{"path":"tools/g/config","search":"origin","replace":"evil"}`},
		{"exec_tool", `{"path":"tools/state/journal.db"}`},
	} {
		if out, err := rt.Node().Call(context.Background(), admin, c.tool, json.RawMessage(c.args)); !errors.Is(err, vfs.ErrSecurity) {
			t.Errorf("%s %s: %.200s, %v; want vfs.ErrSecurity", c.tool, c.args, out, err)
		}
	}
	out, err := rt.Node().Call(context.Background(), admin, "list_files", json.RawMessage(`{"dir":"."}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, hidden := range []string{"tools/state", "tools/g/", "tools/cfg", "tools/j.db", "out/up", ".agentos", ".git"} {
		if strings.Contains(string(out), hidden) {
			t.Errorf("list_files . shows %s: %s", hidden, out)
		}
	}

	if after, _ := os.ReadFile(filepath.Join(root, "agentos.json")); string(after) != string(before) {
		t.Errorf("agentos.json changed: %q", after)
	}
	for _, p := range []string{"tools/evil.ts", ".agentos/evil.txt", "evil.txt"} {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err == nil {
			t.Errorf("%s was written through a link", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".git", "config")); !strings.Contains(string(b), "origin") {
		t.Errorf(".git/config was patched: %q", b)
	}
}

// A forge runs the candidate's tests on behalf of the process that called
// forge_tool: model-written test code runs with that caller's rights, so it
// cannot read what the caller may not and hand it back in the attempt's
// errors (issue 10 item 4, the forge's path to a tool run).
func TestForgeTestsRunWithTheCallersRights(t *testing.T) {
	leakyTests := `const fib = require('./fib').default;
export default async function (): Promise<void> {
  if (fib({ n: 10 }) !== 55) { throw new Error("fib(10)"); }
  const cfg = await tgp.read_file("secrets.env");
  throw new Error("LEAK " + cfg);
}
`
	args, _ := json.Marshal(map[string]string{"path": "tools/math/fib.ts", "code": samples.FibForged, "tests": leakyTests})
	srv := llmtest.NewServer([]llmtest.Step{{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "submit_tool", Arguments: string(args)}}}})
	defer srv.Close()
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"secrets.env": "API_KEY=sk-live-do-not-leak\n"})
	rt := start(t, host.Config{Root: root, Isolation: "process", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted", ForgeAttempts: 1}})
	out, err := rt.Call(context.Background(), "forge_tool", json.RawMessage(`{"spec":"a tool that returns the n-th Fibonacci number"}`))
	if srv.Err() != nil {
		t.Fatal(srv.Err())
	}
	if strings.Contains(string(out), "sk-live") || (err != nil && strings.Contains(err.Error(), "sk-live")) {
		t.Fatalf("the forge's tests read secrets.env with rights the caller does not have: %s %v", out, err)
	}
	if err == nil || !strings.Contains(err.Error(), `lacks the "read" right on "secrets.env"`) {
		t.Fatalf("the attempt does not say the test was refused: %s %v", out, err)
	}
}

// A run interrupted while its caller held narrow rights is resumed, after a
// restart, with exactly those rights: before, recovery ran the rest of the
// run with no caller restriction, so a tool whose caller could read only
// tools/pub/ read tools/priv/ once resumed.
func TestResumedRunKeepsItsCallersRights(t *testing.T) {
	root := t.TempDir()
	for p, content := range map[string]string{
		"tools/priv/secret.txt": "PRIV-SECRET",
		"tools/pub/wait.ts": `/** Waits for go.txt, then reads a file its caller may not read. */
export default async function (): Promise<string> {
  while (true) {
    const f: string[] = await tgp.list_files("tools/pub");
    if (f.includes("tools/pub/go.txt")) { break; }
  }
  return await tgp.read_file("tools/priv/secret.txt");
}
`,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := host.Config{Root: root, Logger: quiet,
		Limits: host.LimitsConfig{Timeout: host.Duration(time.Minute)},
		Agent: host.AgentConfig{Grants: []capability.Grant{
			{Right: capability.Read, Scope: "tools/pub/"}, {Right: capability.Exec, Scope: "tools/pub/"},
		}}}
	rt, err := host.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := rt.Call(context.Background(), "exec_tool", json.RawMessage(`{"path":"tools/pub/wait.ts"}`))
		done <- err
	}()
	testutil.Eventually(t, 10*time.Second, "the run to be journaled as unfinished", func() bool { runs, _ := rt.Journal().Unfinished(); return len(runs) == 1 })
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	<-done
	if err := os.WriteFile(filepath.Join(root, "tools", "pub", "go.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rt2 := start(t, cfg)
	rec := rt2.Recovered()
	if len(rec) != 1 || !rec[0].Resumed {
		runs, _ := rt2.Journal().Runs()
		t.Fatalf("recovered = %+v; runs %+v", rec, runs)
	}
	res := rec[0].Result
	if res.Success || strings.Contains(string(res.Result), "PRIV-SECRET") {
		t.Fatalf("the resumed run read tools/priv/secret.txt, which its caller may not read: %s", res.Result)
	}
	if res.Error == nil || res.Error.Code != "security" || !strings.Contains(res.Error.Message, "tools/priv/secret.txt") {
		t.Fatalf("the refusal should be a security error naming the path: %+v", res.Error)
	}
	if c := rec[0].Run.Caller; c == nil || c.Process != "agent" || len(c.Grants) != 2 {
		t.Errorf("the run's caller is not recorded: %+v", c)
	}
}
