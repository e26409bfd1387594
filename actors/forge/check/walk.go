package check

import (
	"sync"

	"github.com/agentos-run/agentos/internal/tsparse"
)

// fieldTab maps the grammar's field ids to the fields the rules use.
var fieldTab = sync.OnceValue(func() []field {
	t := make([]field, tsparse.FieldCount()+1)
	for id := range t {
		t[id] = fieldOf(tsparse.FieldName(uint16(id)))
	}
	return t
})

// parse fills w.tree from src, through the shared front end (a source
// checked for an exec's approval is then not parsed again for its
// parameters, see tsparse.Shared). It returns false when tree-sitter gave
// no tree at all (it only fails that way when cancelled, which we never do).
func (w *worker) parse(src []byte) bool {
	t := &w.tree
	t.lines = append(t.lines[:0], 0)
	for i, b := range src {
		if b == '\n' {
			t.lines = append(t.lines, i+1)
		}
	}
	ft := tsparse.Shared(src)
	if ft == nil {
		t.nodes = t.nodes[:0]
		return false
	}
	t.hasError = ft.HasError
	w.annotate(ft)
	if verifyTree != nil {
		verifyTree(src, &w.tree)
	}
	return true
}

// verifyTree, set by the package's tests, checks every tree parse builds.
var verifyTree func(src []byte, t *tree)

// annotate copies the front end's nodes into w.tree.nodes with what the
// rules ask of each (see node).
func (w *worker) annotate(ft *tsparse.Tree) {
	t := &w.tree
	if cap(t.nodes) < len(ft.Nodes) {
		t.nodes = make([]node, len(ft.Nodes))
	}
	t.nodes = t.nodes[:len(ft.Nodes)]
	syms, fields := symbols(), fieldTab()
	for i := range ft.Nodes {
		t.nodes[i] = annotated(&ft.Nodes[i], infoOf(syms, ft.Nodes[i].Sym), t.hasError)
		if p := ft.Nodes[i].Parent; p >= 0 {
			t.inherit(int32(i), p, fields[ft.Nodes[i].Field])
		}
	}
}

// infoOf is what the rules know of symbol sym.
func infoOf(syms []symbolInfo, sym uint16) symbolInfo {
	if int(sym) < len(syms) {
		return syms[sym]
	}
	if sym == tsparse.ErrorSymbol {
		return errorInfo
	}
	return symbolInfo{}
}

// annotated is the rules' node for n. Only nodes the rules look at get a
// position (0 elsewhere, as the rules expect).
func annotated(n *tsparse.Node, info symbolInfo, hasError bool) node {
	nd := node{
		sym: n.Sym, parent: n.Parent, first: n.First, next: n.Next,
		kind: info.kind, named: info.named,
		missing: hasError && n.Missing,
	}
	if positioned(info.kind) || nd.missing {
		nd.start, nd.end = n.Start, n.End
	}
	return nd
}

// inherit sets what node i takes from its parent p: whether it is in a type
// or an enum initializer, and, where a rule asks for it (a positioned node
// of a parent whose children the rules find by field), the field f it
// fills (fNone elsewhere, as the rules expect).
func (t *tree) inherit(i, p int32, f field) {
	nd, pn := &t.nodes[i], &t.nodes[p]
	nd.inType = pn.inType || pn.kind == kTypeContext || pn.kind == kLiteralType
	nd.inEnum = pn.inEnum || pn.kind == kEnumAssignment
	if (positioned(nd.kind) || nd.missing) && usesFields[pn.kind] {
		nd.field = f
	}
}
