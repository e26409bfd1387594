package sandbox

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/internal/benchutil"
	"github.com/agentos-run/agentos/transpile"
)

// BenchmarkPrepare measures hardening a fresh runtime, with and without the
// in-process allocation guards.
func BenchmarkPrepare(b *testing.B) {
	for _, guard := range []bool{false, true} {
		name := "worker"
		if guard {
			name = "guarded"
		}
		b.Run(name, func(b *testing.B) {
			e := NewEngine(0, guard)
			for b.Loop() {
				if p := e.prepare(); p.err != nil {
					b.Fatal(p.err)
				}
			}
		})
	}
}

type nopBridge struct{}

func (nopBridge) Do(context.Context, driver.Call) (json.RawMessage, error) { return nil, nil }
func (nopBridge) Require(context.Context, string, string) (Module, error)  { return Module{}, nil }

func BenchmarkRunFib(b *testing.B) {
	out, err := transpile.Default().Transpile("tools/fib.ts", []byte(`export default function fib(args: { n: number }): number {
  const n = args.n;
  if (n <= 1) return n;
  let a = 0, b = 1;
  for (let i = 2; i <= n; i++) { const t = a + b; a = b; b = t; }
  return b;
}`))
	if err != nil {
		b.Fatal(err)
	}
	job := Job{Entry: Module{Path: "tools/fib.ts", Hash: out.Hash, JS: out.JS}, Args: json.RawMessage(`{"n":10}`)}
	e := NewEngine(0, false)
	cpu := benchutil.CPUTime()
	defer benchutil.ReportCPU(b, cpu)
	for b.Loop() {
		if o := e.Run(context.Background(), job, nopBridge{}); o.Err != nil || string(o.Result) != "55" {
			b.Fatal(o.Err, string(o.Result))
		}
	}
}
