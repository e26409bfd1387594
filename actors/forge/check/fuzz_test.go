package check

import (
	"testing"

	"github.com/agentos-run/agentos/transpile"
)

// FuzzCheck: Check never panics, Valid == (len(Errors) == 0), slices are
// never nil, positions are 1-based and findings are sorted.
func FuzzCheck(f *testing.F) {
	seeds := []string{
		fibTool,
		"",
		"const x = ;",
		"export default function f(args: { s: string }) { return eval(args.s); }",
		"import fs from 'fs'; const p = require(x); import('y');",
		"const s = `a${`b${c}`}\\x41 rm -rf / DROP TABLE t`;",
		"x.constructor.constructor('a')(); with (o) {}",
		"enum E { A = 5 } type T = 3; let v: any = 0x2A + 1_000n;",
		"const password = 'hunter2'; /* @ignore-security */ 'a@b.co'",
		"'unterminated",
		"`unterminated ${",
		"class { constructor() { super(",
		"\xff\xfe\x00 garbage \u2028 line",
		"process.env.X; ({process}); obj.process; globalThis['eval']",
		"tgp.exec_sql(`DELETE FROM t`); tgp.fetch(u); setTimeout('x', 1)",
		"\"\\u{110000}\\x\\u{}\"",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	c := New(Options{AllowedImports: []string{"zod"}, Transpiler: transpile.New(64)})
	f.Fuzz(func(t *testing.T, src string) {
		r := c.Check("tools/fuzz.ts", []byte(src))
		if r.Valid != (len(r.Errors) == 0) {
			t.Fatalf("Valid = %v with %d errors", r.Valid, len(r.Errors))
		}
		if r.Errors == nil || r.Warnings == nil || r.Risks == nil {
			t.Fatal("nil slice in Result")
		}
		if r.Risk == "" {
			t.Fatal("empty Risk")
		}
		for _, list := range [][]Finding{r.Errors, r.Warnings} {
			for i, e := range list {
				if e.Line < 1 || e.Column < 1 || e.Rule == "" || e.Message == "" {
					t.Fatalf("bad finding %+v", e)
				}
				if i > 0 {
					p := list[i-1]
					if p.Line > e.Line || (p.Line == e.Line && p.Column > e.Column) {
						t.Fatalf("unsorted: %v before %v", p, e)
					}
				}
			}
		}
		for _, k := range r.Risks {
			if k.Line < 1 || k.Column < 1 || k.Reason == "" || !k.Level.AtLeast(RiskMedium) || !r.Risk.AtLeast(k.Level) {
				t.Fatalf("bad risk %+v (overall %s)", k, r.Risk)
			}
		}
	})
}
