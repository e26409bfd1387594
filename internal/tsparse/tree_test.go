package tsparse

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	sitter "github.com/smacker/go-tree-sitter"

	"github.com/agentos-run/agentos/internal/samples"
)

// testSources are TypeScript sources of every shape: the samples, the
// toolmeta golden corpus (every tool source the repository holds, and
// broken prefixes of each), and broken and edge cases.
func testSources(t testing.TB) []string {
	srcs := []string{
		"", "\n", samples.FibTool, samples.FibForged, samples.FibForgedBuggy, samples.FibForgedTests,
		"export default function (a: { x: number }) { return a.x +; }",
		"const x = {a: 1, b: [1, 2, 3], c: `t${1 + 2}`}; if (x) { while (true) {",
		"import fs from 'fs'; export const f = (o: any) => o?.a?.[\"b\"] ?? new Date(); enum E { A = 1 }",
		"abstract class A<T> { protected abstract f(): void; static #priv = 1; accessor z = 1; }",
		"let o = a?.b?.[c]?.(d) ?? e; const { q, ...rest } = obj; type K = `p-${string}`;",
		strings.Repeat("(", 3000) + "1" + strings.Repeat(")", 3000),
		strings.Repeat("[", 500),
	}
	b, err := os.ReadFile("../toolmeta/testdata/extract_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct{ Src string }
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		srcs = append(srcs, c.Src)
	}
	return srcs
}

// sameAsNodeAPI compares tr with the tree go-tree-sitter's node API gives
// for src: the same nodes in the same pre-order, with the same symbols,
// types, positions, fields, names, missing flags and links.
func sameAsNodeAPI(t testing.TB, p *sitter.Parser, src string, tr *Tree) {
	ref, err := p.ParseCtx(context.Background(), nil, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	root := ref.RootNode()
	if tr.HasError != root.HasError() {
		t.Fatalf("%q: HasError %v, the node API says %v", src, tr.HasError, root.HasError())
	}
	next := int32(0)
	index := map[uintptr]int32{} // the node API's nodes by ID, to their index
	var fielded []*sitter.Node   // the nodes with a child in a field
	var walk func(n *sitter.Node, parent int32, field string)
	walk = func(n *sitter.Node, parent int32, field string) {
		i := next
		next++
		index[n.ID()] = i
		if int(i) >= len(tr.Nodes) {
			t.Fatalf("%q: the flat tree has %d nodes, the node API more", src, len(tr.Nodes))
		}
		g := tr.Nodes[i]
		if g.Sym != uint16(n.Symbol()) || tr.Type(i) != n.Type() || g.Start != n.StartByte() || g.End != n.EndByte() ||
			g.Parent != parent || FieldName(g.Field) != field || g.Named != n.IsNamed() || g.Missing != n.IsMissing() {
			t.Fatalf("%q: node %d is %+v (%s, field %q), the node API's %s %d-%d parent %d field %q named %v missing %v",
				src, i, g, tr.Type(i), FieldName(g.Field), n.Type(), n.StartByte(), n.EndByte(), parent, field, n.IsNamed(), n.IsMissing())
		}
		prev := int32(-1)
		for k := 0; k < int(n.ChildCount()); k++ {
			c := next
			if prev < 0 && g.First != c || prev >= 0 && tr.Nodes[prev].Next != c {
				t.Fatalf("%q: node %d's child %d is not linked as node %d", src, i, k, c)
			}
			child, field := n.Child(k), n.FieldNameForChild(k)
			if child.IsExtra() {
				field = "" // as ChildByFieldName, which skips extras (comments, some ERRORs)
			} else if field != "" && (len(fielded) == 0 || fielded[len(fielded)-1] != n) {
				fielded = append(fielded, n)
			}
			walk(child, i, field)
			prev = c
		}
		if prev < 0 && g.First != -1 || prev >= 0 && tr.Nodes[prev].Next != -1 {
			t.Fatalf("%q: node %d's children are linked beyond its last", src, i)
		}
	}
	walk(root, -1, "")
	if int(next) != len(tr.Nodes) {
		t.Fatalf("%q: the flat tree has %d nodes, the node API %d", src, len(tr.Nodes), next)
	}
	// On a broken tree the node API contradicts itself (FieldNameForChild
	// names a field ChildByFieldName then does not find): the flat tree's
	// fields are the cursor's, and toolmeta's golden test holds the
	// extraction from broken sources to what the node API found.
	if root.HasError() {
		return
	}
	for _, n := range fielded {
		for k := 0; k < int(n.ChildCount()); k++ {
			name := n.FieldNameForChild(k)
			if name == "" {
				continue
			}
			want := int32(-1)
			if c := n.ChildByFieldName(name); c != nil {
				want = index[c.ID()]
			}
			if got := tr.ChildByField(index[n.ID()], Field(name)); got != want {
				t.Fatalf("%q: node %d's child in field %s is %d, the node API's %d", src, index[n.ID()], name, got, want)
			}
		}
	}
}

// The one-cgo-call walk copies exactly the tree go-tree-sitter's node API
// walks, node by node.
func TestWalkMatchesNodeAPI(t *testing.T) {
	p := sitter.NewParser()
	p.SetLanguage(Language)
	for _, src := range testSources(t) {
		tr := Parse([]byte(src))
		if tr == nil {
			t.Fatalf("%q: no tree", src)
		}
		sameAsNodeAPI(t, p, src, tr)
	}
}

// FuzzWalk compares the walk with the node API on any source.
func FuzzWalk(f *testing.F) {
	for _, s := range testSources(f)[:13] {
		f.Add([]byte(s))
	}
	p := sitter.NewParser()
	p.SetLanguage(Language)
	f.Fuzz(func(t *testing.T, src []byte) {
		tr := Parse(src)
		if tr == nil {
			t.Fatal("no tree")
		}
		sameAsNodeAPI(t, p, string(src), tr)
	})
}

func TestTreeHelpers(t *testing.T) {
	src := "/** d */\nexport default function f(a?: number, b) { return a; }"
	tr := Parse([]byte(src))
	root := int32(0)
	var kids []string
	for c := range tr.NamedChildren(root) {
		kids = append(kids, tr.Type(c))
	}
	if strings.Join(kids, " ") != "comment export_statement" {
		t.Fatalf("root's named children: %v", kids)
	}
	exp := tr.LastNamedChild(root)
	if !tr.HasToken(exp, "default") || tr.HasToken(exp, "async") {
		t.Fatal("HasToken: export default")
	}
	fn := tr.ChildByField(exp, Field("declaration"))
	if fn < 0 || tr.Type(fn) != "function_declaration" || tr.Text(tr.ChildByField(fn, Field("name"))) != "f" {
		t.Fatalf("the declaration: %d", fn)
	}
	params := tr.ChildByField(fn, Field("parameters"))
	if first := tr.FirstNamedChild(params); tr.Type(first) != "optional_parameter" || !tr.HasToken(first, "?") {
		t.Fatalf("the first parameter: %s", tr.Type(first))
	}
	if tr.ChildByField(params, Field("body")) != -1 || tr.FirstNamedChild(tr.FirstNamedChild(root)) != -1 {
		t.Fatal("no such child: want -1")
	}
	if SymbolName(ErrorSymbol) != "ERROR" || !IsNamed(ErrorSymbol) || SymbolName(uint16(SymbolCount())) != "" || FieldName(0) != "" {
		t.Fatal("the symbol table's edges")
	}
}

func TestFieldPanicsOnATypo(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Field(\"nmae\") did not panic")
		}
	}()
	Field("nmae")
}

func TestShared(t *testing.T) {
	src := []byte("export default function shared_test_1() {}")
	a := Shared(src)
	src[len(src)-2] = ' ' // the caller's buffer is reused
	if string(a.Src) != "export default function shared_test_1() {}" {
		t.Fatal("Shared kept the caller's buffer, not a copy")
	}
	if b := Shared([]byte("export default function shared_test_1() {}")); b != a {
		t.Fatal("the same content was parsed again")
	}
	if c := Shared(src); c == a || string(c.Src) != string(src) {
		t.Fatal("another content got the first tree")
	}
	for i := range sharedEntries {
		Shared([]byte("const x" + strings.Repeat("x", i) + " = 1;"))
	}
	if b := Shared([]byte("export default function shared_test_1() {}")); b == a {
		t.Fatalf("the cache kept more than %d trees", sharedEntries)
	}
	big := []byte("const a = 1;" + strings.Repeat(" ", maxSharedSource))
	if Shared(big) == Shared(big) {
		t.Fatal("a source over maxSharedSource was kept")
	}
}

func BenchmarkParse(b *testing.B) {
	src := []byte(samples.FibForged)
	b.ReportAllocs()
	for b.Loop() {
		Parse(src)
	}
}

func TestSharedParsesOnce(t *testing.T) {
	src := []byte("export default function shared_test_2(args: { n: number }) { return args.n; }")
	before := Parses()
	Shared(src)
	Shared(src)
	if n := Parses() - before; n != 1 {
		t.Fatalf("two Shared calls of one source parsed it %d times", n)
	}
	Parse(src)
	if n := Parses() - before; n != 2 {
		t.Fatalf("Parse after Shared: %d parses, want 2", n)
	}
}
