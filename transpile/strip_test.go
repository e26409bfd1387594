package transpile

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// corpus returns every tool source the repository has: the .ts files and
// the Go string literals (tests, samples, examples, fixtures) that hold a
// module with an export, keyed by where they are.
func corpus(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		switch {
		case strings.HasSuffix(p, ".ts"):
			b, err := os.ReadFile(p)
			if err == nil {
				out[p] = string(b)
			}
		case strings.HasSuffix(p, ".go"):
			goStrings(p, out)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// goStrings adds the string literals of a Go file that look like modules.
func goStrings(p string, out map[string]string) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
	if err != nil {
		return
	}
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err == nil && strings.Contains(s, "export ") {
			out[fset.Position(lit.Pos()).String()] = s
		}
		return true
	})
}

// TestStripMatchesEsbuildOnTheCorpus runs every tool source of the
// repository both ways: where the fast path does not decline, its program
// MUST load and run in goja to the same exports and the same result (or
// the same error) as esbuild's.
func TestStripMatchesEsbuildOnTheCorpus(t *testing.T) {
	srcs := corpus(t)
	if len(srcs) < 100 {
		t.Fatalf("found only %d tool sources: is the test run from transpile/?", len(srcs))
	}
	stripped := 0
	for where, src := range srcs {
		out, err := New(0).Transpile("tools/x.ts", []byte(src))
		js, ok := strip("tools/x.ts", []byte(src))
		if !ok {
			continue
		}
		stripped++
		if err != nil {
			// What only esbuild refuses on a clean tree MUST still be
			// refused at exec: by goja's compiler.
			if o := runModule("tools/x.ts", js, "{}"); !strings.HasPrefix(o.Err, "compile: ") {
				t.Errorf("%s: esbuild refuses (%v) what the fast path took and goja runs:\n%s", where, err, src)
			}
			continue
		}
		argsList := []string{`{}`, `{"n":10,"a":2,"b":3,"text":"hi","x":1}`}
		if hungry(src) || strings.Contains(src, "Date.now") || strings.Contains(src, "random") {
			argsList = []string{""} // load it, do not call it
		}
		for _, args := range argsList {
			want, got := runModule("tools/x.ts", out.JS, args), runModule("tools/x.ts", js, args)
			if want.Err == "timeout" || got.Err == "timeout" {
				continue // the machine's load, not the code: a 300 ms budget says nothing
			}
			if !sameOutcome(want, got) {
				t.Errorf("%s with %s:\nesbuild:    %+v\nfast path: %+v\nsource:\n%s\nstripped:\n%s", where, args, want, got, src, js)
			}
		}
	}
	t.Logf("%d sources, %d taken by the fast path", len(srcs), stripped)
	if stripped < len(srcs)/3 {
		t.Errorf("the fast path took only %d of %d sources", stripped, len(srcs))
	}
}

// hungry reports a source that may be written to exhaust memory (the
// sandbox's limit tests) in a native call goja cannot interrupt, which this
// test's plain runtime would not survive: such a source is loaded, not
// called. So is one whose result differs from run to run.
func hungry(src string) bool {
	for _, s := range []string{"Array", "[", ".repeat(", ".fill(", ".push(", ".concat(", "JSON.stringify(", ".pad", "1e", "0000", "0x", ".join(", "length", "indexOf", "Of("} {
		if strings.Contains(src, s) {
			return true
		}
	}
	return false
}

// sameOutcome compares two runs; function names in stack traces differ
// (esbuild names an anonymous default export <file>_default) and so may
// columns (esbuild maps a position to its nearest token).
func sameOutcome(a, b outcome) bool {
	return a.Result == b.Result && a.Exports == b.Exports && a.Err == b.Err
}
