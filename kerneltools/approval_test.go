package kerneltools_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/kerneltools"
	"github.com/agentos-run/agentos/transpile"
)

// riskyLib is a module check_tool rates high; lowEntry, which requires it,
// is rated low on its own.
const (
	riskyLib = `/** Doubles. @ignore-security */
export function twice(n: number): number { return n * 2; }
`
	lowEntry = `import { twice } from "./lib/risky";

/** Doubles a number through a helper. */
export default function entry(args: { n: number }): number {
  return twice(args.n);
}
`
)

// bootGated boots a node whose approval gate times a waiting run out at
// once (a run that needs an approval ends approval_timeout, its request
// pending).
func bootGated(t *testing.T) (testNode, *approval.Gate, *kernel.Process) {
	t.Helper()
	st, err := approval.OpenStore(filepath.Join(t.TempDir(), "approvals.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	g := approval.NewGate(st, approval.Policy{Timeout: time.Millisecond}, quiet)
	n := boot(t, executor.IsolationInProcess, kernel.Options{}, func(o *host.NodeOptions) { o.Approvals = g })
	p := spawn(t, n.Kernel(), block, kernel.SpawnOptions{Grants: agentGrants})
	return n, g, p
}

func writeTool(t *testing.T, n testNode, p, src string) {
	t.Helper()
	full := filepath.Join(n.root, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func execRes(t *testing.T, n testNode, p *kernel.Process, args string) kerneltools.ExecResult {
	t.Helper()
	var res kerneltools.ExecResult
	if err := json.Unmarshal(mustCall(t, n, p, "exec_tool", args), &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func pendingOf(t *testing.T, g *approval.Gate, path string) []approval.Request {
	t.Helper()
	rs, err := g.List(approval.StatePending)
	if err != nil {
		t.Fatal(err)
	}
	var out []approval.Request
	for _, r := range rs {
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// A low-risk entry that requires a high-risk module is as risky as the
// module: its run waits for an approval that covers the module's version,
// a changed module asks again, and a recorded version (tools/x.ts@<hash>)
// is judged with the modules it is pinned to.
func TestGateJudgesRequiredModules(t *testing.T) {
	n, g, p := bootGated(t)
	writeTool(t, n, "tools/lib/risky.ts", riskyLib)
	writeTool(t, n, "tools/entry.ts", lowEntry)
	res := execRes(t, n, p, `{"path":"tools/entry.ts","args":{"n":21}}`)
	if res.Success || res.Error == nil || string(res.Error.Kind) != approval.CodeTimeout {
		t.Fatalf("a low-risk entry requiring a high-risk module ran without approval: %+v", res)
	}
	rs := pendingOf(t, g, "tools/entry.ts")
	if len(rs) != 1 || rs[0].Risk != "high" || len(rs[0].Modules) != 1 || !strings.HasPrefix(rs[0].Modules[0], "tools/lib/risky.ts@") || rs[0].Source == "" || rs[0].Source == rs[0].Hash {
		t.Fatalf("the request of the entry: %+v", rs)
	}
	if !strings.Contains(strings.Join(rs[0].Reasons, ";"), "tools/lib/risky.ts: ") {
		t.Errorf("the reasons do not name the module: %q", rs[0].Reasons)
	}
	first, err := g.Decide(rs[0].ID, true, "test", "")
	if err != nil {
		t.Fatal(err)
	}
	res = execRes(t, n, p, `{"path":"tools/entry.ts","args":{"n":21}}`)
	if !res.Success || string(res.Result.Result) != "42" || res.RunID == "" {
		t.Fatalf("the approved run: %+v", res)
	}
	entryHash := res.Hash

	// The module changes: a new version, which asks again.
	writeTool(t, n, "tools/lib/risky.ts", strings.Replace(riskyLib, "n * 2", "n * 3", 1))
	res = execRes(t, n, p, `{"path":"tools/entry.ts","args":{"n":21}}`)
	if res.Success || res.Error == nil || string(res.Error.Kind) != approval.CodeTimeout {
		t.Fatalf("a changed module ran on the old approval: %+v", res)
	}
	if rs := pendingOf(t, g, "tools/entry.ts"); len(rs) != 1 || rs[0].ID == first.ID || rs[0].Source != first.Source {
		t.Fatalf("the changed module's request: %+v (first %+v)", rs, first)
	}

	// The recorded version is pinned to the first module: denied, it does
	// not run by its hash either.
	if _, err := g.Decide(first.ID, false, "test", "no"); err != nil {
		t.Fatal(err)
	}
	res = execRes(t, n, p, `{"path":"tools/entry.ts@`+entryHash[:12]+`","args":{"n":21}}`)
	if res.Success || res.Error == nil || string(res.Error.Kind) != approval.CodeDenied {
		t.Fatalf("the recorded version with its denied module: %+v", res)
	}
}

// The run executes the version the gate judged, read once: a tool
// rewritten between the judgment (no approval needed) and the run never
// runs on that judgment; the bytes judged run, and are the ones journaled.
// With the gate off too, the run executes the one read its exec right was
// checked on (before, the gate, the version hold and the run each read the
// file again: a TOCTOU window, and four walks of the jail per exec).
func TestGateRunsWhatItJudged(t *testing.T) {
	gated, _, gp := bootGated(t)
	plain := boot(t, executor.IsolationInProcess, kernel.Options{})
	for _, c := range []struct {
		name string
		n    testNode
		p    *kernel.Process
	}{{"gate on", gated, gp}, {"gate off", plain, spawn(t, plain.Kernel(), block, kernel.SpawnOptions{Grants: agentGrants})}} {
		t.Run(c.name, func(t *testing.T) {
			const judged = "/** Returns one. */\nexport default function t(): number { return 1; }\n"
			writeTool(t, c.n, "tools/t.ts", judged)
			kerneltools.SetAfterGate(func(string) {
				writeTool(t, c.n, "tools/t.ts", "/** Returns two. @ignore-security */\nexport default function t(): number { return 2; }\n")
			})
			defer kerneltools.SetAfterGate(nil)
			res := execRes(t, c.n, c.p, `{"path":"tools/t.ts"}`)
			if !res.Success || string(res.Result.Result) != "1" {
				t.Fatalf("the run did not execute the version read and judged (1): %+v", res)
			}
			if want := transpile.Hash([]byte(judged)); res.Hash != want || res.RunID == "" {
				t.Fatalf("the run's hash %s (run %q), want the judged source's %s", res.Hash, res.RunID, want)
			}
		})
	}
}
