package tsparse

import (
	"iter"
	"sync"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/typescript/typescript"
)

// ErrorSymbol is the symbol of tree-sitter's ERROR nodes.
const ErrorSymbol = 0xFFFF

// Node is one syntax node. Links are indices into Tree.Nodes; -1 is none.
type Node struct {
	Start, End uint32 // byte offsets into Tree.Src
	Parent     int32
	First      int32  // first child
	Next       int32  // next sibling
	Sym        uint16 // grammar symbol (SymbolName names it)
	Field      uint16 // the grammar field the node fills in its parent (FieldName); 0: none
	Named      bool   // a named node (not an anonymous token)
	Missing    bool   // inserted by error recovery (a MISSING node)
}

// Tree is a flat syntax tree: every node of tree-sitter's tree, in
// pre-order (so in source order); Nodes[0] is the root.
type Tree struct {
	Src      []byte
	Nodes    []Node
	HasError bool // the tree holds ERROR or MISSING nodes
}

// Type is the grammar's name of node i's symbol ("identifier", "ERROR",
// "default" ...), what go-tree-sitter's Node.Type says.
func (t *Tree) Type(i int32) string { return SymbolName(t.Nodes[i].Sym) }

// Text is the source text of node i.
func (t *Tree) Text(i int32) string { return string(t.Src[t.Nodes[i].Start:t.Nodes[i].End]) }

// Children yields node i's children in order.
func (t *Tree) Children(i int32) iter.Seq[int32] {
	return func(yield func(int32) bool) {
		for c := t.Nodes[i].First; c >= 0; c = t.Nodes[c].Next {
			if !yield(c) {
				return
			}
		}
	}
}

// NamedChildren yields node i's named children (comments included) in
// order.
func (t *Tree) NamedChildren(i int32) iter.Seq[int32] {
	return func(yield func(int32) bool) {
		for c := t.Nodes[i].First; c >= 0; c = t.Nodes[c].Next {
			if t.Nodes[c].Named && !yield(c) {
				return
			}
		}
	}
}

// FirstNamedChild is node i's first named child, or -1.
func (t *Tree) FirstNamedChild(i int32) int32 {
	for c := range t.NamedChildren(i) {
		return c
	}
	return -1
}

// LastNamedChild is node i's last named child, or -1.
func (t *Tree) LastNamedChild(i int32) int32 {
	last := int32(-1)
	for c := range t.NamedChildren(i) {
		last = c
	}
	return last
}

// ChildByField is node i's first child that fills field f, or -1.
func (t *Tree) ChildByField(i int32, f uint16) int32 {
	for c := range t.Children(i) {
		if t.Nodes[c].Field == f {
			return c
		}
	}
	return -1
}

// HasToken reports whether node i has an anonymous child token of type
// typ ("default", "?", "async" ...).
func (t *Tree) HasToken(i int32, typ string) bool {
	for c := range t.Children(i) {
		if !t.Nodes[c].Named && t.Type(c) == typ {
			return true
		}
	}
	return false
}

// Language is the TypeScript grammar the package parses with.
var Language = typescript.GetLanguage()

// symbolTable is the grammar's symbols and fields, by number.
type symbolTable struct {
	names  []string // by symbol
	named  []bool   // by symbol
	fields []string // by field id (0: none)
	ids    map[string]uint16
}

// symbols is built on first use, not at package initialisation (which
// every start of the binary pays).
var symbols = sync.OnceValue(func() *symbolTable {
	l := Language
	n := l.SymbolCount()
	st := &symbolTable{names: make([]string, n), named: make([]bool, n), ids: map[string]uint16{}}
	for s := uint32(0); s < n; s++ {
		st.names[s] = l.SymbolName(sitter.Symbol(s))
		st.named[s] = l.SymbolType(sitter.Symbol(s)) == sitter.SymbolTypeRegular
	}
	st.fields = append(st.fields, "")
	for id := 1; ; id++ {
		name := l.FieldName(id)
		if name == "" {
			break
		}
		st.fields = append(st.fields, name)
		st.ids[name] = uint16(id)
	}
	return st
})

// SymbolCount is the number of the grammar's symbols (ErrorSymbol apart).
func SymbolCount() int { return len(symbols().names) }

// SymbolName is the grammar's name of sym: "ERROR" for ErrorSymbol, "" for
// a number the grammar does not have.
func SymbolName(sym uint16) string {
	if sym == ErrorSymbol {
		return "ERROR"
	}
	if names := symbols().names; int(sym) < len(names) {
		return names[sym]
	}
	return ""
}

// IsNamed reports whether nodes of symbol sym are named (ERROR is).
func IsNamed(sym uint16) bool {
	if sym == ErrorSymbol {
		return true
	}
	named := symbols().named
	return int(sym) < len(named) && named[sym]
}

// FieldCount is the number of the grammar's fields; their ids run from 1.
func FieldCount() int { return len(symbols().fields) - 1 }

// FieldName is the grammar's name of field id, "" for 0 or an unknown id.
func FieldName(id uint16) string {
	if fs := symbols().fields; int(id) < len(fs) {
		return fs[id]
	}
	return ""
}

// Field is the id of the grammar's field name. IMPORTANT: name MUST be one
// of the grammar's fields; Field panics otherwise (a typo in the caller).
func Field(name string) uint16 {
	id, ok := symbols().ids[name]
	if !ok {
		panic("tsparse: the TypeScript grammar has no field " + name)
	}
	return id
}
