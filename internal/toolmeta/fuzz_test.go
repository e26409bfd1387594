package toolmeta

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzExtract: Extract never panics, always returns, and its schema is
// valid JSON of an object.
func FuzzExtract(f *testing.F) {
	for _, s := range []string{
		compoundSrc,
		"",
		"/**",
		"/** */",
		"/***/",
		"/** @tag */",
		"/** @param {",
		"/** {@link } @tag a,,b */ export default (x) => x",
		"export default function f(args: { a: { b: { c: Array<Record<string, 'x' | 1 | -2 | true>> } } }) {}",
		"type A = B; type B = A; export default function f(args: A) {}",
		"interface A { a: A[] } export default function f(args: A) {}",
		"export default function f({ a = 1, b: { c }, ...rest }) {}",
		"export default function f(args: { n: number ) {",
		"export default f; const f = async ({ x }: { x: string }) => x;",
		"\xff\xfe/** bad utf8 \xc3 */ export default function f(args: { \xff: number }) {}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		m := Extract(src)
		if m.Parameters != nil {
			var s map[string]any
			if err := json.Unmarshal(m.Parameters, &s); err != nil || s["type"] != "object" {
				t.Fatalf("parameters %s: %v", m.Parameters, err)
			}
		}
		// ParamsOf skips the marshalling: its schema MUST be the one
		// Extract marshals, and it MUST be nil exactly when Extract has
		// no declared parameters.
		p := ParamsOf(src)
		if want := m.Parameters != nil && m.declared; (p != nil) != want {
			t.Fatalf("ParamsOf = %v, Extract's parameters %s (declared %v)", p, m.Parameters, m.declared)
		}
		if p != nil {
			if b, err := json.Marshal(p.s); err != nil || string(b) != string(m.Parameters) {
				t.Fatalf("ParamsOf's schema %s (%v), Extract's %s", b, err, m.Parameters)
			}
		}
		for _, tg := range m.Tags {
			if tg == "" {
				t.Fatal("empty tag")
			}
		}
		if utf8.Valid(src) && !utf8.ValidString(m.Description) {
			t.Fatalf("description %q is not UTF-8", m.Description)
		}
	})
}

// FuzzSearch: any query returns ordered hits scored in 0..1.
func FuzzSearch(f *testing.F) {
	for _, q := range []string{"compound interest calculator", "", "fibonacci", "a the", "日本語", "URLs2JSON", "\xff"} {
		f.Add(q)
	}
	x := NewInverted()
	for _, t := range synthetic(300) {
		x.Put(t, "tools")
	}
	f.Fuzz(func(t *testing.T, q string) {
		ms := x.search(q, 20)
		for i, m := range ms {
			if m.score < 0 || m.score > 1 || m.raw <= 0 {
				t.Fatalf("match %+v", m)
			}
			if i > 0 && m.score > ms[i-1].score {
				t.Fatal("not ordered")
			}
		}
	})
}
