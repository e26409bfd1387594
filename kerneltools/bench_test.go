package kerneltools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/kerneltools"
)

// BenchmarkExecTool is one exec_tool kernel call of fib(10), cached, through
// the whole path: the process's gate and quota, the exec right, the message
// to the executor actor (its token verified there), the journal recording
// the run, and the reply. Compare with actors/executor's
// BenchmarkExecCached* (the executor alone); -nojournal leaves the
// journal's commit out, so that the message path shows.
func BenchmarkExecTool(b *testing.B) {
	for _, bc := range []struct {
		name    string
		mode    executor.Isolation
		journal bool
		gate    bool // the approval gate on (fib is low risk: it never waits)
	}{
		{"inprocess", executor.IsolationInProcess, true, false},
		{"process", executor.IsolationProcess, true, false},
		{"inprocess-nojournal", executor.IsolationInProcess, false, false},
		{"inprocess-nojournal-gate", executor.IsolationInProcess, false, true},
		{"process-nojournal", executor.IsolationProcess, false, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			n := boot(b, bc.mode, kernel.Options{}, func(o *host.NodeOptions) {
				if !bc.journal {
					o.Journal = nil
				}
				if bc.gate {
					st, err := approval.OpenStore(filepath.Join(b.TempDir(), "approvals.db"), time.Second)
					if err != nil {
						b.Fatal(err)
					}
					o.Approvals = approval.NewGate(st, approval.Policy{}, quiet)
				}
			})
			p := spawn(b, n.Kernel(), block, kernel.SpawnOptions{Grants: agentGrants})
			src, _ := json.Marshal(samples.FibTool)
			mustCall(b, n, p, "write_file", `{"path":"tools/math/fib.ts","content":`+string(src)+`}`)
			args := json.RawMessage(`{"path":"tools/math/fib.ts","args":{"n":10}}`)
			ctx := context.Background()
			for b.Loop() {
				out, err := n.Call(ctx, p, "exec_tool", args)
				if err != nil {
					b.Fatal(err)
				}
				var r kerneltools.ExecResult
				if err := json.Unmarshal(out, &r); err != nil || !r.Success || string(r.Result.Result) != "55" {
					b.Fatalf("%s %v", out, err)
				}
			}
		})
	}
}

// BenchmarkExecToolNewSource is exec_tool of a tool source the node has
// never seen, through the whole path of BenchmarkExecTool (journaled, the
// default worker mode): the shape of TGP's exec_tool figure (transpile, a
// new isolate, run). Every iteration rewrites the tool's file with a new
// comment (outside the timer), so the transpiler's cache, the executor's
// parameter cache, the worker's compiled-program cache and the journal's
// source store all miss: the run transpiles, compiles, journals the new
// source, and runs.
func BenchmarkExecToolNewSource(b *testing.B) {
	n := boot(b, executor.IsolationProcess, kernel.Options{})
	p := spawn(b, n.Kernel(), block, kernel.SpawnOptions{Grants: agentGrants})
	src, _ := json.Marshal(samples.FibTool)
	mustCall(b, n, p, "write_file", `{"path":"tools/math/fib.ts","content":`+string(src)+`}`)
	file := filepath.Join(n.root, "tools", "math", "fib.ts")
	args := json.RawMessage(`{"path":"tools/math/fib.ts","args":{"n":10}}`)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		if err := os.WriteFile(file, fmt.Appendf(nil, "// source %d of %p\n%s", i, b, samples.FibTool), 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		out, err := n.Call(ctx, p, "exec_tool", args)
		if err != nil {
			b.Fatal(err)
		}
		var r kerneltools.ExecResult
		if err := json.Unmarshal(out, &r); err != nil || !r.Success || string(r.Result.Result) != "55" {
			b.Fatalf("%s %v", out, err)
		}
	}
}
