package transpile

import (
	"errors"
	"strings"
	"testing"

	"github.com/evanw/esbuild/pkg/api"
)

func TestTranspileWrapsCommonJS(t *testing.T) {
	tr := New(0)
	out, err := tr.Transpile("tools/double.ts", []byte("export default (a: number): number => a * 2;\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.JS, wrapPrefix) {
		t.Fatalf("output does not start with the module wrapper:\n%s", out.JS)
	}
	if !strings.Contains(out.JS, "sourceMappingURL=data:application/json;base64,") {
		t.Fatal("output has no inline source map")
	}
	if out.Hash != Hash([]byte("export default (a: number): number => a * 2;\n")) {
		t.Fatal("hash is not the content hash of the source")
	}
}

func TestSyntaxErrorHasLineAndColumn(t *testing.T) {
	_, err := New(0).Transpile("tools/bad.ts", []byte("const a = 1;\nconst x = ;\n"))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want *Error, got %v", err)
	}
	d := e.Diagnostics[0]
	if d.Line != 2 || d.Column != 11 {
		t.Fatalf("diagnostic at %d:%d, want 2:11 (%s)", d.Line, d.Column, d.Message)
	}
	if !strings.Contains(err.Error(), "tools/bad.ts:2:11:") {
		t.Fatalf("error text %q does not name path:line:column", err)
	}
}

func TestTopLevelAwaitIsAClearCompileError(t *testing.T) {
	_, err := New(0).Transpile("tools/tla.ts", []byte("await Promise.resolve(1);\nexport default () => 1;\n"))
	if err == nil || !strings.Contains(err.Error(), "top-level await is not supported") {
		t.Fatalf("got %v", err)
	}
}

func TestCacheByContentHash(t *testing.T) {
	tr := New(0)
	src := []byte("export default () => 1;")
	if tr.Cached("tools/a.ts", src) {
		t.Fatal("cached before first transpile")
	}
	a, _ := tr.Transpile("tools/a.ts", src)
	if !tr.Cached("tools/a.ts", src) {
		t.Fatal("not cached after transpile")
	}
	b, _ := tr.Transpile("tools/a.ts", src)
	if a != b {
		t.Fatal("cached output differs")
	}
	if tr.Cached("tools/a.ts", []byte("export default () => 2;")) {
		t.Fatal("changed source reported as cached")
	}
}

func BenchmarkTranspileNewSource(b *testing.B) {
	tr := New(0)
	for i := 0; b.Loop(); i++ {
		src := []byte("export default function fib(args: { n: number }) { let a = 0, b = 1; for (let i = 2; i <= args.n; i++) { const t = a + b; a = b; b = t; } return args.n <= 1 ? args.n : b; } // " + string(rune('a'+i%26)) + strings.Repeat("x", i%97))
		if _, err := tr.Transpile("tools/fib.ts", src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTranspileCached(b *testing.B) {
	tr := New(0)
	src := []byte("export default function fib(args: { n: number }) { return args.n; }")
	tr.Transpile("tools/fib.ts", src)
	for b.Loop() {
		if _, err := tr.Transpile("tools/fib.ts", src); err != nil {
			b.Fatal(err)
		}
	}
}

// esbuild v0.28.2 never returns on a truncated UTF-8 sequence; such a source
// must be a compile error, not a hang.
func TestInvalidUTF8IsACompileErrorNotAHang(t *testing.T) {
	_, err := New(0).Transpile("tools/bin.ts", []byte("export default () => 1;\nconst s = '\xec\xec\xec\xec\xec\xec';\n"))
	var e *Error
	if !errors.As(err, &e) || e.Diagnostics[0].Line != 2 || e.Diagnostics[0].Column != 12 || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Fatalf("got %v", err)
	}
}

// TestHelpersMatchEsbuild transpiles modules that use every interop helper
// and requires each one to be recognised. It fails when an esbuild upgrade
// changes a helper's text: update esbuildHelpers (and HelpersJS if the
// semantics changed).
func TestHelpersMatchEsbuild(t *testing.T) {
	src := "import d from './x';\nimport * as ns from './y';\nexport * from './z';\nexport const a = d + ns.b;\nexport default a;\n"
	res := api.Transform(src, api.TransformOptions{Loader: api.LoaderTS, Format: api.FormatCommonJS, Target: api.ES2022, Banner: wrapPrefix})
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	js, n := rewriteHelpers(string(res.Code))
	if n != len(esbuildHelpers) {
		t.Fatalf("recognised %d of %d helpers; esbuild's prelude changed:\n%s", n, len(esbuildHelpers), res.Code)
	}
	if strings.Count(js, "\n") != strings.Count(string(res.Code), "\n") {
		t.Fatal("the rewrite changed the line count: the source map would be off")
	}
	if !strings.Contains(js, "var __toCommonJS = "+HelpersParam+".__toCommonJS;") {
		t.Fatalf("no alias in:\n%s", js)
	}
}

// A user variable that merely looks like a helper is left alone, and so is
// everything after the prelude.
func TestRewriteStopsAtUserCode(t *testing.T) {
	js := "(function () {\nvar __export = 1;\nvar __defProp = Object.defineProperty;\n})"
	if out, n := rewriteHelpers(js); n != 0 || out != js {
		t.Fatalf("rewrote %d: %s", n, out)
	}
}
