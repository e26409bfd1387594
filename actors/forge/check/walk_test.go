package check

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	sitter "github.com/smacker/go-tree-sitter"

	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/internal/tsparse"
)

// parseCursor is the walk parse replaced: go-tree-sitter's cursor, one cgo
// call per node and step. It fills w.tree from src. It returns false when tree-sitter gave no
// tree at all (it only fails that way when cancelled, which we never do).
func (w *worker) parseCursor(p *sitter.Parser, src []byte) bool {
	t := &w.tree
	t.nodes = t.nodes[:0]
	t.lines = append(t.lines[:0], 0)
	for i, b := range src {
		if b == '\n' {
			t.lines = append(t.lines, i+1)
		}
	}
	ts, err := p.ParseCtx(context.Background(), nil, src)
	if err != nil || ts == nil {
		return false
	}
	defer ts.Close()
	root := ts.RootNode()
	t.hasError = root.HasError()
	cur := sitter.NewTreeCursor(root)
	defer cur.Close()

	var stack []int32 // ancestors of the node being visited
	prev := int32(-1) // previous sibling of the node being visited
	for {
		n := cur.CurrentNode()
		idx := int32(len(t.nodes))
		parent := int32(-1)
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		var info symbolInfo
		sym := uint16(n.Symbol())
		if int(sym) < len(symbols()) {
			info = symbols()[sym]
		} else if sym == tsparse.ErrorSymbol {
			info = symbolInfo{kind: kError, named: true}
		}
		nd := node{
			sym:    sym,
			parent: parent,
			first:  -1,
			next:   -1,
			kind:   info.kind,
			named:  info.named,
		}
		if t.hasError {
			nd.missing = n.IsMissing()
		}
		if parent >= 0 {
			p := &t.nodes[parent]
			nd.inType = p.inType || p.kind == kTypeContext || p.kind == kLiteralType
			nd.inEnum = p.inEnum || p.kind == kEnumAssignment
		}
		// Every cgo call costs (about 0.1 µs): only nodes the rules look at
		// get a position, and only where a rule asks for it, a field.
		if positioned(info.kind) || nd.missing {
			nd.start, nd.end = n.StartByte(), n.EndByte()
			if parent >= 0 && usesFields[t.nodes[parent].kind] {
				nd.field = fieldOf(cur.CurrentFieldName())
			}
		}
		t.nodes = append(t.nodes, nd)
		if prev >= 0 {
			t.nodes[prev].next = idx
		} else if parent >= 0 {
			t.nodes[parent].first = idx
		}
		if cur.GoToFirstChild() {
			stack = append(stack, idx)
			prev = -1
			continue
		}
		prev = idx
		for !cur.GoToNextSibling() {
			if !cur.GoToParent() {
				return true
			}
			prev = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
		}
	}
}

// Every tree any test of the package builds is compared with the cursor
// walk's.
func init() {
	var mu sync.Mutex
	p := sitter.NewParser()
	p.SetLanguage(tsparse.Language)
	ref := &worker{}
	verifyTree = func(src []byte, t *tree) {
		mu.Lock()
		defer mu.Unlock()
		if !ref.parseCursor(p, src) {
			panic("the cursor walk got no tree")
		}
		if t.hasError != ref.tree.hasError || !reflect.DeepEqual(t.nodes, ref.tree.nodes) || !reflect.DeepEqual(t.lines, ref.tree.lines) {
			panic(fmt.Sprintf("the flat walk and the cursor walk differ on %q", src))
		}
	}
}

// testSources are every TypeScript source the package's tests use, plus
// broken ones (ERROR and MISSING nodes) and edge cases.
func testSources(t *testing.T) [][]byte {
	t.Helper()
	srcs := [][]byte{
		[]byte(""), []byte("\n"), []byte(fibTool),
		[]byte(samples.FibForged), []byte(samples.FibForgedBuggy), []byte(samples.FibForgedTests),
		[]byte("export default function (a: { x: number }) { return a.x +; }"),
		[]byte("const x = {a: 1, b: [1, 2, 3], c: `t${1 + 2}`}; if (x) { while (true) {"),
		[]byte("import fs from 'fs'; export const f = (o: any) => o?.a?.[\"b\"] ?? new Date(); enum E { A = 1 }"),
		[]byte(strings.Repeat("(", 3000) + "1" + strings.Repeat(")", 3000)),
		[]byte(strings.Repeat("[", 500)),
	}
	err := filepath.WalkDir("testdata", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		srcs = append(srcs, b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return srcs
}

// The front end's tree, annotated, is exactly the tree go-tree-sitter's
// cursor walk gave the rules.
func TestFlatWalkMatchesCursorWalk(t *testing.T) {
	p := sitter.NewParser()
	p.SetLanguage(tsparse.Language)
	fast, slow := newWorker(), newWorker()
	for i, src := range testSources(t) {
		if !fast.parse(src) || !slow.parseCursor(p, src) {
			t.Fatalf("source %d: no tree", i)
		}
		if fast.tree.hasError != slow.tree.hasError || !reflect.DeepEqual(fast.tree.lines, slow.tree.lines) {
			t.Fatalf("source %d: hasError %v/%v, lines differ", i, fast.tree.hasError, slow.tree.hasError)
		}
		if len(fast.tree.nodes) != len(slow.tree.nodes) {
			t.Fatalf("source %d: %d nodes, the cursor walk %d", i, len(fast.tree.nodes), len(slow.tree.nodes))
		}
		for k := range fast.tree.nodes {
			if fast.tree.nodes[k] != slow.tree.nodes[k] {
				t.Fatalf("source %d node %d: %+v, the cursor walk %+v", i, k, fast.tree.nodes[k], slow.tree.nodes[k])
			}
		}
	}
}

// FuzzFlatWalk compares the two walks on any source.
func FuzzFlatWalk(f *testing.F) {
	f.Add([]byte(fibTool))
	f.Add([]byte("let x = (1 +"))
	p := sitter.NewParser()
	p.SetLanguage(tsparse.Language)
	fast, slow := newWorker(), newWorker()
	f.Fuzz(func(t *testing.T, src []byte) {
		if !fast.parse(src) || !slow.parseCursor(p, src) {
			t.Fatal("no tree")
		}
		if !reflect.DeepEqual(fast.tree.nodes, slow.tree.nodes) || fast.tree.hasError != slow.tree.hasError {
			t.Fatalf("the walks differ on %q", src)
		}
	})
}
