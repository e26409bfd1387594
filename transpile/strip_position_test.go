package transpile

import (
	"strings"
	"testing"
)

// TestStripKeepsPositions: an error thrown on the first line (which the
// wrapper shares, mapped back by a small source map) and on later lines
// (unmapped: goja's own positions are the source's) names the TypeScript
// file, line and 1-based column (as compile diagnostics are). esbuild's
// source-mapped output names the same line; goja reports its mapped
// columns 0-based, one less.
func TestStripKeepsPositions(t *testing.T) {
	for name, c := range map[string]struct{ src, want string }{
		"line one": {"export default function (a: { n: number }): number { throw new Error('x' + a.n); }\n",
			"tools/pos.ts:1:60"},
		"later line": {"// a comment\nexport default function boom(args: { n: number }): number {\n  const x: number = args.n as number;\n  throw new Error('at ' + x);\n}\n",
			"tools/pos.ts:4:9"},
		"comment, then code on line one": {"/* doc */ export default function (a: { n: number }): number { throw new Error('x' + a.n); }\n",
			"tools/pos.ts:1:70"},
		"doc comment on line one": {"/** Doubles. */\nexport default function (a: { n: number }): number {\n  throw new Error('x' + a.n);\n}\n",
			"tools/pos.ts:3:9"},
		"after erased lines": {"interface A {\n  n: number;\n}\ntype B = A;\nexport default (a: B): number => {\n  return (null as any).n;\n};\n",
			"tools/pos.ts:6:24"},
	} {
		js, ok := strip("tools/pos.ts", []byte(c.src))
		if !ok {
			t.Fatalf("%s: the fast path declined", name)
		}
		lineOne := strings.Contains(c.want, ".ts:1:")
		if mapped := strings.Contains(js, "sourceMappingURL"); mapped != lineOne {
			t.Errorf("%s: a source map (%v) is there exactly when line one holds code", name, mapped)
		}
		got := runModule("tools/pos.ts", js, `{"n":1}`)
		t.Logf("%s:\nfast path %s\nesbuild %s", name, got.Stack, runModule("tools/pos.ts", must(New(0).Transpile("tools/pos.ts", []byte(c.src))), `{"n":1}`).Stack)
		if !strings.Contains(got.Stack, c.want) {
			t.Errorf("%s: stack %q does not name %s", name, got.Stack, c.want)
		}
		out, err := New(0).Transpile("tools/pos.ts", []byte(c.src))
		if err != nil {
			t.Fatal(err)
		}
		want := runModule("tools/pos.ts", out.JS, `{"n":1}`)
		if line := c.want[:strings.LastIndexByte(c.want[:len(c.want)-1], ':')+1]; !strings.Contains(want.Stack, line) {
			t.Errorf("%s: esbuild's stack %q is not on %s", name, want.Stack, line)
		}
	}
}

func must(o Output, err error) string {
	if err != nil {
		panic(err)
	}
	return o.JS
}
