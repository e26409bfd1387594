package transpile

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/internal/benchutil"
)

// BenchmarkTranspileNewSourceFreshGoroutine is BenchmarkTranspileNewSource
// where the executor transpiles: on a goroutine started for the run, whose
// stack starts small.
func BenchmarkTranspileNewSourceFreshGoroutine(b *testing.B) {
	tr := New(0)
	cpu := benchutil.CPUTime()
	defer func() { benchutil.ReportCPU(b, cpu) }()
	for i := 0; b.Loop(); i++ {
		src := []byte("export default function fib(args: { n: number }) { let a = 0, b = 1; for (let i = 2; i <= args.n; i++) { const t = a + b; a = b; b = t; } return args.n <= 1 ? args.n : b; } // " + string(rune('a'+i%26)) + strings.Repeat("x", i%97) + strings.Repeat("y", i/97))
		done := make(chan error)
		go func() {
			_, err := tr.Transpile("tools/fib.ts", src)
			done <- err
		}()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunnableNewSourceFreshGoroutine is the same with the executor's
// call, Runnable: the fast path (a tree-sitter parse and the blanking), no
// esbuild.
func BenchmarkRunnableNewSourceFreshGoroutine(b *testing.B) {
	tr := New(0)
	cpu := benchutil.CPUTime()
	defer func() { benchutil.ReportCPU(b, cpu) }()
	for i := 0; b.Loop(); i++ {
		src := []byte("export default function fib(args: { n: number }) { let a = 0, b = 1; for (let i = 2; i <= args.n; i++) { const t = a + b; a = b; b = t; } return args.n <= 1 ? args.n : b; } // " + string(rune('a'+i%26)) + strings.Repeat("x", i%97) + strings.Repeat("y", i/97))
		done := make(chan error)
		go func() {
			out, err := tr.Runnable("tools/fib.ts", src)
			if err == nil && !out.Stripped {
				err = errors.New("the fast path declined")
			}
			done <- err
		}()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}
