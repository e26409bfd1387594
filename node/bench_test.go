package node_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/node"
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
	}{
		{"inprocess", executor.IsolationInProcess, true},
		{"process", executor.IsolationProcess, true},
		{"inprocess-nojournal", executor.IsolationInProcess, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			n := boot(b, bc.mode, kernel.Options{}, func(o *node.Options) {
				if !bc.journal {
					o.Journal = nil
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
				var r node.ExecResult
				if err := json.Unmarshal(out, &r); err != nil || !r.Success || string(r.Result.Result) != "55" {
					b.Fatalf("%s %v", out, err)
				}
			}
		})
	}
}
