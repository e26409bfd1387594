package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentos-run/agentos/internal/benchutil"
)

// benchExec runs fib(10) repeatedly: the tool is transpiled and compiled once,
// so this measures a cached run (fresh runtime, bridge, result).
func benchExec(b *testing.B, mode Isolation) {
	e := newExec(b, mode, map[string]string{"tools/math/fib.ts": fibTool}, func(o *Options) { o.Workers = 1 })
	req := Request{Path: "tools/math/fib.ts", Args: json.RawMessage(`{"n": 10}`)}
	if r := e.Exec(context.Background(), req); !r.Success || string(r.Result) != "55" { // warm up
		b.Fatalf("%+v", r)
	}
	cpu := benchutil.CPUTime()
	defer benchutil.ReportCPU(b, cpu) // the host process only: a worker's CPU is not counted
	for b.Loop() {
		if r := e.Exec(context.Background(), req); !r.Success {
			b.Fatal(r.Error)
		}
	}
}

func BenchmarkExecCachedInProcess(b *testing.B) { benchExec(b, IsolationInProcess) }
func BenchmarkExecCachedWorker(b *testing.B)    { benchExec(b, IsolationProcess) }

// BenchmarkExecNewSource changes the tool's source before every run, so each
// run pays for esbuild's transpile and goja's compile.
func BenchmarkExecNewSource(b *testing.B) {
	for _, mode := range modes {
		b.Run(string(mode), func(b *testing.B) {
			e := newExec(b, mode, map[string]string{"tools/math/fib.ts": fibTool}, func(o *Options) { o.Workers = 1 })
			e.Exec(context.Background(), Request{Path: "tools/math/fib.ts", Args: json.RawMessage(`{"n": 10}`)})
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				src := fmt.Sprintf("%s// revision %d\n", fibTool, i)
				writeTool(b, e, "tools/math/fib.ts", src)
				b.StartTimer()
				if r := e.Exec(context.Background(), Request{Path: "tools/math/fib.ts", Args: json.RawMessage(`{"n": 10}`)}); !r.Success {
					b.Fatal(r.Error)
				}
			}
		})
	}
}

func writeTool(b *testing.B, e *Executor, path, src string) {
	if err := e.root.WriteFile(path, []byte(src)); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkInfiniteLoopOvershoot reports how long after its 50 ms limit an
// endless loop is stopped (median, in ms), in each mode.
func BenchmarkInfiniteLoopOvershoot(b *testing.B) {
	const limit = 50 * time.Millisecond
	for _, mode := range modes {
		b.Run(string(mode), func(b *testing.B) {
			e := newExec(b, mode, map[string]string{"tools/freeze.ts": "export default () => { while (true) {} };\n"}, func(o *Options) { o.Workers = 1 })
			var over []float64
			for b.Loop() {
				start := time.Now()
				r := e.Exec(context.Background(), Request{Path: "tools/freeze.ts", Limits: Limits{Timeout: limit}})
				if r.Error == nil || r.Error.Kind != "timeout" {
					b.Fatalf("%+v", r.Error)
				}
				over = append(over, float64(time.Since(start)-limit)/float64(time.Millisecond))
			}
			slices.Sort(over)
			b.ReportMetric(over[len(over)/2], "overshoot-ms")
		})
	}
}
