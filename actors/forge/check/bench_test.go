package check

import (
	"strconv"
	"testing"

	"github.com/agentos-run/agentos/internal/benchutil"
	"github.com/agentos-run/agentos/internal/toolmeta"
	"github.com/agentos-run/agentos/transpile"
)

// BenchmarkCheckCached checks the same source repeatedly: the transpile is
// a cache hit, so this measures hashing + parse + lint.
func BenchmarkCheckCached(b *testing.B) {
	benchWithoutVerify(b)
	c := New(Options{})
	src := []byte(fibTool)
	if r := c.Check("tools/fib.ts", src); !r.Valid {
		b.Fatalf("fib tool is invalid: %v", r.Errors)
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchutil.CPUTime()
	for b.Loop() {
		c.Check("tools/fib.ts", src)
	}
	benchutil.ReportCPU(b, cpu)
}

// BenchmarkCheckNewSource checks a source that differs every iteration, so
// the transpiler runs each time (with a private transpiler, to keep the
// shared cache clean).
func BenchmarkCheckNewSource(b *testing.B) {
	benchNewSources(b, func(c *Checker, src []byte) { c.Check("tools/fib.ts", src) })
}

// BenchmarkCheckDeferredNewSource is BenchmarkCheckNewSource through
// CheckDeferred, check_tool's path: the tree alone judges a clean source.
func BenchmarkCheckDeferredNewSource(b *testing.B) {
	benchNewSources(b, func(c *Checker, src []byte) {
		if r := c.CheckDeferred("tools/fib.ts", src); !r.Valid {
			b.Fatalf("fib tool is invalid: %v", r.Errors)
		}
	})
}

// benchWithoutVerify turns off, for the benchmark b, the package tests'
// comparison of every tree with go-tree-sitter's cursor walk (walk_test.go),
// which is no part of a check and cost more than the check itself.
func benchWithoutVerify(b *testing.B) {
	v := verifyTree
	verifyTree = nil
	b.Cleanup(func() { verifyTree = v })
}

// BenchmarkCheckAndParamsNewSource is what an exec of a new source asks of
// its source before it runs (with approvals on): the gate's rating
// (CheckDeferred) and the executor's parameter check (toolmeta.ParamsOf).
func BenchmarkCheckAndParamsNewSource(b *testing.B) {
	benchNewSources(b, func(c *Checker, src []byte) {
		c.CheckDeferred("tools/fib.ts", src)
		if toolmeta.ParamsOf(src) == nil {
			b.Fatal("fib declares no parameters")
		}
	})
}

// benchNewSources runs check on a source that differs every iteration (the
// fib tool with a numbered comment), with a private transpiler to keep the
// shared cache clean, and reports allocations and CPU per check.
func benchNewSources(b *testing.B, check func(c *Checker, src []byte)) {
	benchWithoutVerify(b)
	c := New(Options{Transpiler: transpile.New(0)})
	b.ReportAllocs()
	i := 0
	cpu := benchutil.CPUTime()
	for b.Loop() {
		i++
		check(c, []byte(fibTool+"// "+strconv.Itoa(i)+"\n"))
	}
	benchutil.ReportCPU(b, cpu)
}
