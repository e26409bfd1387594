package kerneltools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/forge/check"
	gitclient "github.com/agentos-run/agentos/actors/git/client"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/internal/testutil"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/kerneltool"
	"github.com/agentos-run/agentos/kerneltools"
	"github.com/agentos-run/agentos/transpile"
	"github.com/agentos-run/agentos/vfs"
)

type testNode struct {
	*host.BootedNode
	j    *journal.Journal
	root string // the tool root
}

// boot starts a node over a fresh tool root with a real executor (mode) and
// a real bbolt journal.
func boot(t testing.TB, mode executor.Isolation, kopts kernel.Options, tweak ...func(*host.NodeOptions)) testNode {
	t.Helper()
	root := t.TempDir()
	ex, err := executor.New(executor.Options{Root: root, Isolation: mode, Workers: 1, TempDir: t.TempDir(), Limits: executor.Limits{Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(filepath.Join(t.TempDir(), "journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	jail, err := vfs.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	kopts.Logger = quiet
	k, err := kernel.New(kopts)
	if err != nil {
		t.Fatal(err)
	}
	nopts := host.NodeOptions{Options: kerneltools.Options{Kernel: k, Journal: j, Jail: jail, Logger: quiet}, Executor: ex}
	for _, f := range tweak {
		f(&nopts)
	}
	n, err := host.BootNode(context.Background(), nopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.Close(ctx); err != nil {
			t.Error(err)
		}
		ex.Close()
		j.Close()
		jail.Close()
	})
	return testNode{BootedNode: n, j: j, root: root}
}

func call(t testing.TB, n testNode, p *kernel.Process, tool, args string) (json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return n.Call(ctx, p, tool, json.RawMessage(args))
}

func mustCall(t testing.TB, n testNode, p *kernel.Process, tool, args string) json.RawMessage {
	t.Helper()
	out, err := call(t, n, p, tool, args)
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	return out
}

var agentGrants = []capability.Grant{{Right: capability.Read, Scope: "tools/"}, {Right: capability.Write, Scope: "tools/"}, {Right: capability.Exec, Scope: "tools/"}}

func TestToolsSchemas(t *testing.T) {
	n := boot(t, executor.IsolationInProcess, kernel.Options{})
	p := spawn(t, n.Kernel(), block, kernel.SpawnOptions{Grants: agentGrants})
	tools, err := n.Tools(p)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(tool.Parameters, &schema); err != nil || schema.Type != "object" || len(schema.Required) == 0 {
			t.Errorf("%s: bad schema %s (%v)", tool.Name, tool.Parameters, err)
		}
		for _, r := range schema.Required {
			if _, ok := schema.Properties[r]; !ok {
				t.Errorf("%s: required %q is not a property", tool.Name, r)
			}
		}
		if tool.Description == "" {
			t.Errorf("%s: no description", tool.Name)
		}
	}
	if want := []string{"list_files", "read_file", "write_file", "patch_file", "check_tool", "exec_sql", "search_tools", "forge_tool", "exec_tool", "remember", "recall", "forget"}; !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	if _, err := n.Tools(p, "rm_rf"); !errors.Is(err, kerneltool.ErrUnknownTool) {
		t.Fatalf("unknown tool: %v", err)
	}
	sel, err := n.Tools(p, "exec_tool")
	if err != nil || len(sel) != 1 {
		t.Fatalf("select one tool: %v %v", sel, err)
	}
}

// The kernel tools end to end, the way an LLM calls them: write a tool,
// list, read, check and run it, patch it, run it again.
func TestToolsEndToEnd(t *testing.T) {
	for _, mode := range []executor.Isolation{executor.IsolationInProcess, executor.IsolationProcess} {
		t.Run(string(mode), func(t *testing.T) {
			n := boot(t, mode, kernel.Options{})
			p := spawn(t, n.Kernel(), block, kernel.SpawnOptions{Grants: agentGrants})
			src, _ := json.Marshal(samples.FibTool)
			var w gitclient.Written
			if err := json.Unmarshal(mustCall(t, n, p, "write_file", `{"path":"tools/math/fib.ts","content":`+string(src)+`}`), &w); err != nil || !w.Created || w.Bytes != len(samples.FibTool) {
				t.Fatalf("write_file: %+v %v", w, err)
			}
			if got := string(mustCall(t, n, p, "list_files", `{"dir":"tools"}`)); got != `["tools/math/fib.ts"]` {
				t.Fatalf("list_files = %s", got)
			}
			var content string
			_ = json.Unmarshal(mustCall(t, n, p, "read_file", `{"path":"tools/math/fib.ts"}`), &content)
			if content != samples.FibTool {
				t.Fatal("read_file does not return what write_file wrote")
			}
			var chk struct {
				Valid bool `json:"valid"`
			}
			if err := json.Unmarshal(mustCall(t, n, p, "check_tool", `{"path":"tools/math/fib.ts"}`), &chk); err != nil || !chk.Valid {
				t.Fatalf("check_tool: %v %v", chk, err)
			}
			var res kerneltools.ExecResult
			if err := json.Unmarshal(mustCall(t, n, p, "exec_tool", `{"path":"tools/math/fib.ts","args":{"n":10}}`), &res); err != nil {
				t.Fatal(err)
			}
			if !res.Success || string(res.Result.Result) != "55" || res.RunID == "" {
				t.Fatalf("exec_tool = %+v", res)
			}
			if meta, err := n.j.Get(res.RunID); err != nil || meta.Status != journal.StatusOK {
				t.Fatalf("journal run: %+v %v", meta, err)
			}

			_, err := call(t, n, p, "patch_file", `{"path":"tools/math/fib.ts","search":"no such text","replace":"x"}`)
			if !errors.Is(err, gitclient.ErrSearchNotFound) || !strings.Contains(err.Error(), "tools/math/fib.ts") {
				t.Fatalf("patch with an absent search: %v", err)
			}
			mustCall(t, n, p, "patch_file", `{"path":"tools/math/fib.ts","search":"return b;","replace":"return b + 1;"}`)
			if err := json.Unmarshal(mustCall(t, n, p, "exec_tool", `{"path":"tools/math/fib.ts","args":{"n":10}}`), &res); err != nil || string(res.Result.Result) != "56" {
				t.Fatalf("after the patch: %+v %v", res, err)
			}
			// A failing tool is a result, not a Go error.
			if err := json.Unmarshal(mustCall(t, n, p, "exec_tool", `{"path":"tools/math/missing.ts"}`), &res); err != nil || res.Success || !errors.Is(res.Error, executor.ErrNotFound) {
				t.Fatalf("a failing run: %+v %v", res, err)
			}
			if calls := p.Info().Calls; calls != 9 {
				t.Fatalf("ps counts %d calls, want 9", calls)
			}
		})
	}
}

func TestToolsRefusals(t *testing.T) {
	n := boot(t, executor.IsolationInProcess, kernel.Options{})
	reader := spawn(t, n.Kernel(), block, kernel.SpawnOptions{Grants: []capability.Grant{{Right: capability.Read, Scope: "tools/math/"}}})
	_, err := call(t, n, reader, "write_file", `{"path":"tools/math/x.ts","content":"x"}`)
	if !errors.Is(err, capability.ErrDenied) || !strings.Contains(err.Error(), `"write"`) || !strings.Contains(err.Error(), "tools/math/x.ts") {
		t.Fatalf("write without the right: %v", err)
	}
	if _, err := call(t, n, reader, "read_file", `{"path":"tools/secret.ts"}`); !errors.Is(err, capability.ErrDenied) {
		t.Fatalf("read outside the scope: %v", err)
	}
	if _, err := call(t, n, reader, "read_file", `{"path":"../etc/passwd"}`); err == nil || errors.Is(err, capability.ErrDenied) {
		t.Fatalf("a path escaping the root must fail as a path error: %v", err)
	}
	for _, bad := range []string{`{"path":"tools/math/a.ts","extra":1}`, `{}`, `[]`, `{"path":3}`} {
		if _, err := call(t, n, reader, "read_file", bad); !errors.Is(err, kerneltool.ErrInvalidArgs) {
			t.Errorf("read_file %s: %v, want ErrInvalidArgs", bad, err)
		}
	}
	if _, err := call(t, n, reader, "format_disk", `{}`); !errors.Is(err, kerneltool.ErrUnknownTool) {
		t.Fatalf("unknown tool: %v", err)
	}
	refused := 0
	for _, e := range n.Kernel().Events(0, 0) {
		if e.Kind == kernel.EventRefused && e.PID == reader.PID() {
			refused++
		}
	}
	if refused != 2 {
		t.Fatalf("%d refusal events, want 2", refused)
	}
}

// A tool run holds exactly its process's rights, checked by the executor
// actor against the process's token: a read the process may not do is
// refused inside the run (the tool sees it), and the refusal is the
// process's "refused" kernel event, like a refused kernel call.
func TestRunRefusalsAreKernelEvents(t *testing.T) {
	n := boot(t, executor.IsolationInProcess, kernel.Options{})
	k := n.Kernel()
	w := spawn(t, k, block, kernel.SpawnOptions{Grants: agentGrants})
	mustCall(t, n, w, "write_file", `{"path":"tools/pub/peek.ts","content":"export default async function () { try { await tgp.read_file('tools/priv/x.txt'); return 'read'; } catch (e) { return String(e); } }"}`)
	mustCall(t, n, w, "write_file", `{"path":"tools/priv/x.txt","content":"secret"}`)
	narrow := spawn(t, k, block, kernel.SpawnOptions{Name: "narrow", Grants: []capability.Grant{{Right: capability.Read, Scope: "tools/pub/"}, {Right: capability.Exec, Scope: "tools/pub/"}}})
	var res kerneltools.ExecResult
	if err := json.Unmarshal(mustCall(t, n, narrow, "exec_tool", `{"path":"tools/pub/peek.ts"}`), &res); err != nil || !res.Success || !strings.Contains(string(res.Result.Result), `lacks the \"read\" right on \"tools/priv/x.txt\"`) {
		t.Fatalf("a run reading what its process may not: %s %+v %v", res.Result.Result, res.Error, err)
	}
	// The wider process reads it.
	if err := json.Unmarshal(mustCall(t, n, w, "exec_tool", `{"path":"tools/pub/peek.ts"}`), &res); err != nil || string(res.Result.Result) != `"read"` {
		t.Fatalf("a run of a process that may read: %s %v", res.Result.Result, err)
	}
	// The refusal note travels to the kernel actor as a message: poll.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		var got []kernel.Event
		for _, e := range k.Events(0, 0) {
			if e.Kind == kernel.EventRefused && e.PID == narrow.PID() {
				got = append(got, e)
			}
		}
		if len(got) == 1 && got[0].Name == "narrow" && strings.Contains(got[0].Detail, `read on "tools/priv/x.txt"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("refused events of the run's process: %+v, want one for its read", got)
		}
	}
}

// Exhausting a quota ends the offender with quota:<meter>; its sibling
// keeps calling.
func TestToolsQuota(t *testing.T) {
	n := boot(t, executor.IsolationInProcess, kernel.Options{})
	k := n.Kernel()
	parent := spawn(t, k, block, kernel.SpawnOptions{Grants: append([]capability.Grant{{Right: capability.Spawn}}, agentGrants...)})
	greedy, err := parent.Spawn(block, kernel.SpawnOptions{Grants: agentGrants, Quota: capability.Limits{capability.ToolCalls: 3}})
	if err != nil {
		t.Fatal(err)
	}
	sibling, err := parent.Spawn(block, kernel.SpawnOptions{Grants: agentGrants})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		mustCall(t, n, greedy, "list_files", `{"dir":"tools"}`)
	}
	_, err = call(t, n, greedy, "list_files", `{"dir":"tools"}`)
	var qe *capability.QuotaError
	if !errors.As(err, &qe) || qe.Meter != capability.ToolCalls {
		t.Fatalf("4th call: %v", err)
	}
	if r := wait(t, greedy); r.String() != "quota:tool_calls" {
		t.Fatalf("offender: %v", r)
	}
	if _, err := call(t, n, greedy, "list_files", `{"dir":"tools"}`); !errors.Is(err, kernel.ErrExited) {
		t.Fatalf("a call after the end: %v", err)
	}
	mustCall(t, n, sibling, "list_files", `{"dir":"tools"}`)

	// memory_mb bounds each run: a process whose quota is below the
	// executor's default gets a run limited to its quota.
	mem, err := parent.Spawn(block, kernel.SpawnOptions{Grants: agentGrants, Quota: capability.Limits{capability.MemoryMB: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = call(t, n, mem, "exec_tool", `{"path":"tools/none.ts"}`)
	if !errors.As(err, &qe) || qe.Meter != capability.MemoryMB {
		t.Fatalf("exec with half a megabyte: %v", err)
	}
}

// A stopped process's kernel calls wait until it is continued.
func TestToolsWaitWhileStopped(t *testing.T) {
	n := boot(t, executor.IsolationInProcess, kernel.Options{})
	k := n.Kernel()
	p := spawn(t, k, block, kernel.SpawnOptions{Grants: agentGrants})
	if err := k.Stop(p.PID()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := n.Call(context.Background(), p, "list_files", json.RawMessage(`{"dir":"tools"}`))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a stopped process's call returned: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := k.Continue(p.PID()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Killing a process cancels its tool run; the journal keeps the run
// resumable.
func TestKillCancelsRun(t *testing.T) {
	n := boot(t, executor.IsolationProcess, kernel.Options{})
	k := n.Kernel()
	p := spawn(t, k, block, kernel.SpawnOptions{Grants: agentGrants})
	mustCall(t, n, p, "write_file", `{"path":"tools/spin.ts","content":"export default async function () { await tgp.list_files('tools'); for (;;) {} }"}`)
	done := make(chan json.RawMessage, 1)
	go func() {
		out, _ := n.Call(context.Background(), p, "exec_tool", json.RawMessage(`{"path":"tools/spin.ts"}`))
		done <- out
	}()
	testutil.Eventually(t, 10*time.Second, "the run to start", func() bool { runs, _ := n.j.Unfinished(); return len(runs) == 1 })
	if err := k.Kill(p.PID(), "test"); err != nil {
		t.Fatal(err)
	}
	var res kerneltools.ExecResult
	if err := json.Unmarshal(<-done, &res); err != nil || res.Success || res.Error == nil || !errors.Is(res.Error, executor.ErrCancelled) {
		t.Fatalf("killed run: %+v %v", res, err)
	}
	if runs, _ := n.j.Unfinished(); len(runs) != 1 {
		t.Fatalf("unfinished runs after the kill: %d, want 1 (resumable)", len(runs))
	}
}

// Killing a process whose run is calling drivers in a loop leaves the run
// cancelled and resumable, never failed by the refusal its revoked rights
// cause (a shutdown used to race the two).
func TestKillDuringDriverCallsCancelsRun(t *testing.T) {
	n := boot(t, executor.IsolationInProcess, kernel.Options{})
	k := n.Kernel()
	w := spawn(t, k, block, kernel.SpawnOptions{Grants: agentGrants})
	mustCall(t, n, w, "write_file", `{"path":"tools/poll.ts","content":"export default async function () { for (;;) { await tgp.list_files('tools'); } }"}`)
	for i := range 20 {
		p := spawn(t, k, block, kernel.SpawnOptions{Grants: agentGrants})
		done := make(chan json.RawMessage, 1)
		go func() {
			out, _ := n.Call(context.Background(), p, "exec_tool", json.RawMessage(`{"path":"tools/poll.ts"}`))
			done <- out
		}()
		testutil.Eventually(t, 10*time.Second, fmt.Sprintf("run %d to start", i), func() bool { runs, _ := n.j.Unfinished(); return len(runs) == i+1 })
		time.Sleep(time.Duration(i%4) * time.Millisecond) // kill at different points of the loop
		if err := k.Kill(p.PID(), "test"); err != nil {
			t.Fatal(err)
		}
		var res kerneltools.ExecResult
		if err := json.Unmarshal(<-done, &res); err != nil || res.Error == nil || !errors.Is(res.Error, executor.ErrCancelled) {
			t.Fatalf("run %d, killed while calling drivers: %+v %v (want cancelled)", i, res.Error, err)
		}
		if runs, _ := n.j.Unfinished(); len(runs) != i+1 {
			t.Fatalf("run %d: %d unfinished runs, want %d (every killed run resumable)", i, len(runs), i+1)
		}
	}
}

// search_tools shows a process only the tools it may read; a process that
// may read nothing is refused.
func TestSearchToolsScope(t *testing.T) {
	n := boot(t, executor.IsolationInProcess, kernel.Options{})
	k := n.Kernel()
	writer := spawn(t, k, block, kernel.SpawnOptions{Grants: agentGrants})
	mustCall(t, n, writer, "write_file", `{"path":"tools/math/sum.ts","content":"/** Adds numbers together. */\nexport default function (a: { xs: number[] }): number { return a.xs.reduce((s, x) => s + x, 0); }\n"}`)
	mustCall(t, n, writer, "write_file", `{"path":"tools/secret/sum.ts","content":"/** Adds secret numbers together. */\nexport default function (): number { return 0; }\n"}`)
	var hits []kerneltools.SearchHit
	_ = json.Unmarshal(mustCall(t, n, writer, "search_tools", `{"query":"add numbers"}`), &hits)
	if len(hits) != 2 {
		t.Fatalf("writer sees %d hits, want 2", len(hits))
	}
	mathOnly := spawn(t, k, block, kernel.SpawnOptions{Grants: []capability.Grant{{Right: capability.Read, Scope: "tools/math/"}}})
	_ = json.Unmarshal(mustCall(t, n, mathOnly, "search_tools", `{"query":"add numbers","limit":5}`), &hits)
	if len(hits) != 1 || hits[0].Path != "tools/math/sum.ts" {
		t.Fatalf("a tools/math/ reader sees %+v", hits)
	}
	blind := spawn(t, k, block, kernel.SpawnOptions{Grants: []capability.Grant{{Right: capability.Exec, Scope: "tools/"}}})
	if _, err := call(t, n, blind, "search_tools", `{"query":"add numbers"}`); !errors.Is(err, capability.ErrDenied) {
		t.Fatalf("search without any read right: %v", err)
	}
	if _, err := call(t, n, writer, "search_tools", `{"query":"  "}`); !errors.Is(err, kerneltool.ErrInvalidArgs) {
		t.Fatalf("empty query: %v", err)
	}
	// detail "brief": the same hits, each only path, name, summary, score.
	var brief []kerneltools.BriefHit
	out := mustCall(t, n, mathOnly, "search_tools", `{"query":"add numbers","detail":"brief"}`)
	_ = json.Unmarshal(out, &brief)
	if len(brief) != 1 || brief[0].Path != "tools/math/sum.ts" || brief[0].Summary != "Adds numbers together." || brief[0].Score <= 0 || strings.Contains(string(out), "parameters") {
		t.Fatalf("a brief search: %s", out)
	}
	if _, err := call(t, n, writer, "search_tools", `{"query":"add","detail":"short"}`); !errors.Is(err, kerneltool.ErrInvalidArgs) || !strings.Contains(err.Error(), `"brief"`) {
		t.Fatalf("an unknown detail: %v", err)
	}
}

// TestCheckToolCompilesAtFirstExec is issue 28 goal 2: check_tool judges a
// new source on its syntax tree, without the transpiler; an error only the
// transpiler finds (a name declared twice) is reported by the first exec,
// which compiles the source anyway, and by every check_tool after it.
func TestCheckToolCompilesAtFirstExec(t *testing.T) {
	n := boot(t, executor.IsolationInProcess, kernel.Options{})
	p := spawn(t, n.Kernel(), block, kernel.SpawnOptions{Grants: agentGrants})
	src := "export default function dup(): number {\n  let x = 1;\n  let x = 2;\n  return x; // " + t.Name() + "\n}\n"
	writeTool(t, n, "tools/dup.ts", src)
	type checked struct {
		Valid  bool            `json:"valid"`
		Errors []check.Finding `json:"errors"`
	}
	var chk checked
	if err := json.Unmarshal(mustCall(t, n, p, "check_tool", `{"path":"tools/dup.ts"}`), &chk); err != nil || !chk.Valid {
		t.Fatalf("check_tool before any exec: %+v %v, want valid (judged on the tree)", chk, err)
	}
	if transpile.Default().Cached("tools/dup.ts", []byte(src)) {
		t.Fatal("check_tool ran the transpiler on a source whose tree is clean")
	}
	var res kerneltools.ExecResult
	if err := json.Unmarshal(mustCall(t, n, p, "exec_tool", `{"path":"tools/dup.ts"}`), &res); err != nil {
		t.Fatal(err)
	}
	if res.Success || res.Error == nil || !strings.Contains(res.Error.Error(), `"x" has already been declared`) {
		t.Fatalf("exec_tool of a name declared twice: %+v", res)
	}
	if err := json.Unmarshal(mustCall(t, n, p, "check_tool", `{"path":"tools/dup.ts"}`), &chk); err != nil || chk.Valid ||
		len(chk.Errors) != 1 || chk.Errors[0].Rule != "syntax" || chk.Errors[0].Line != 3 || chk.Errors[0].Column != 7 {
		t.Fatalf("check_tool after the exec: %+v %v, want the transpiler's error at 3:7", chk, err)
	}
}

// TestToolNamesAreTheLeafs: the kernel tools' table lists exactly the
// names the leaf (kerneltool.Names) gives an agent and the MCP server.
func TestToolNamesAreTheLeafs(t *testing.T) {
	if got, want := kerneltools.ToolNames(), kerneltool.Names(); !slices.Equal(got, want) {
		t.Fatalf("node.ToolNames() = %v, kerneltool.Names() = %v: keep them equal", got, want)
	}
}
