package transpile

import (
	"strings"
	"testing"

	"github.com/agentos-run/agentos/internal/samples"
)

// FuzzStrip compares the fast path with esbuild on mutated sources: where
// the fast path takes a source esbuild compiles, both programs MUST load
// and run to the same exports and result; where esbuild refuses it, goja's
// compiler MUST refuse the fast path's program (the error is still seen at
// exec). Run: go test ./transpile -run '^$' -fuzz FuzzStrip -fuzztime 30s
func FuzzStrip(f *testing.F) {
	for _, s := range []string{
		samples.FibTool,
		"export default (a: number): number => a * 2;\n",
		"interface A { n: number }\nexport default function (a: A) { return (a as any).n! + 1; }\n",
		"export const x: number = 1;\nlet y = 2;\nexport { y as z };\nexport default class K<T> implements A { v?: T; m(): number { return x; } }\n",
		"type T = string;\nconst f = <U,>(u: U): U => u;\nexport default async () => f<T>('a') satisfies T;\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if hungry(src) || strings.Contains(src, "while") || strings.Contains(src, "for") {
			return // no runaway natives or loops in this plain runtime
		}
		js, ok := strip("tools/f.ts", []byte(src))
		if !ok {
			return
		}
		out, err := New(0).Transpile("tools/f.ts", []byte(src))
		if err != nil {
			if o := runModule("tools/f.ts", js, "{}"); !strings.HasPrefix(o.Err, "compile: ") {
				t.Fatalf("esbuild refuses (%v) what the fast path took and goja loads:\n%s", err, src)
			}
			return
		}
		want, got := runModule("tools/f.ts", out.JS, `{"n":3}`), runModule("tools/f.ts", js, `{"n":3}`)
		if !sameOutcome(want, got) {
			t.Fatalf("esbuild: %+v\nfast path: %+v\nsource:\n%s\nstripped:\n%s", want, got, src, js)
		}
	})
}
