package executor

import (
	"strings"
	"testing"

	"github.com/agentos-run/agentos/transpile"
)

// A source tree-sitter parses cleanly but esbuild refuses (a name declared
// twice) runs through the fast path and fails in goja's compiler; the run
// fails with esbuild's diagnostics (what check_tool reports), and that
// verdict is cached for the next check_tool of the same content. In process
// and in a worker alike.
func TestCompileErrorOfAStrippedSourceIsEsbuilds(t *testing.T) {
	for _, mode := range []Isolation{IsolationInProcess, IsolationProcess} {
		t.Run(string(mode), func(t *testing.T) {
			src := "export default function dup(): number {\n  let x = 1;\n  let x = 2;\n  return x; // " + t.Name() + "\n}\n"
			tr := transpile.New(16)
			e := newExec(t, mode, map[string]string{"tools/dup.ts": src}, func(o *Options) { o.Transpiler = tr })
			r := run(t, e, "tools/dup.ts", `{}`)
			wantKind(t, r, "compile_error", `"x" has already been declared`)
			if !strings.Contains(r.Error.Message, "tools/dup.ts:3:") {
				t.Fatalf("the error does not name the line: %s", r.Error.Message)
			}
			if !tr.Cached("tools/dup.ts", []byte(src)) {
				t.Fatal("esbuild's verdict was not cached for check_tool")
			}
		})
	}
}
