package executor

import (
	"strings"
	"testing"
)

// TestStackNamesNestedToolPathOnce: a frame of a tool in a nested directory
// names the tool's path once (issue 11: goja resolved the source map's
// source, the full path, against the module's own directory and printed
// tools/math/tools/math/sleep.ts), in the entry module and in a required
// one.
func TestStackNamesNestedToolPathOnce(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"tools/math/sleep.ts":     "import { fail } from './deep/fail';\n\nexport default (a: { n: number }) => fail(a.n);\n",
			"tools/math/deep/fail.ts": "export function fail(n: number): never {\n  throw new Error('boom ' + n);\n}\n",
		})
		r := run(t, e, "tools/math/sleep.ts", `{"n": 3}`)
		wantKind(t, r, "exception", "Error: boom 3")
		for _, want := range []string{"at fail (tools/math/deep/fail.ts:2:", "tools/math/sleep.ts:3:"} {
			if !strings.Contains(r.Error.Stack, want) {
				t.Errorf("stack does not contain %q:\n%s", want, r.Error.Stack)
			}
		}
		if strings.Contains(r.Error.Stack, "tools/math/tools/") || strings.Contains(r.Error.Stack, "deep/tools/") {
			t.Errorf("stack doubles a path:\n%s", r.Error.Stack)
		}
	})
}
