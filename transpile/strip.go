package transpile

// The fast path: a plain TypeScript tool made runnable without esbuild, in
// the spirit of ts-blank-space and Node's "strip-only" mode. The source is
// parsed once with tree-sitter (internal/tsparse, whose tree the checker and
// the parameter extractor share), TypeScript-only syntax is replaced with
// spaces so that every line and byte column stays where it was, and the ES
// module form is turned into the CommonJS body esbuild would emit.
//
// IMPORTANT: the fast path MUST either give a program that runs as
// esbuild's output runs or decline (strip returns ok false and the caller
// uses esbuild). It declines on anything it does not fully understand:
// a tree with ERROR or MISSING nodes, any node kind not on the allow-list
// (enums, namespaces, decorators, JSX, `import x = require`, `export =`,
// meta properties, dynamic import ...), imports of other modules, parameter
// properties, `this` parameters, top-level await or `this` or `return`,
// async generators and for await (esbuild lowers those for goja), and
// erasures that automatic semicolon insertion would read differently.

import (
	"bytes"

	"github.com/agentos-run/agentos/internal/tsparse"
)

// stripper is one pass of the fast path over one tree.
type stripper struct {
	t       *tsparse.Tree
	out     []byte   // the source being blanked, then the module body
	exports []export // the module's exports, in source order
	fnDepth int      // enclosing non-arrow functions and class bodies (`this` is bound)
	anyFn   int      // enclosing functions of any kind (return is allowed)
	esm     bool     // the source has an import or export statement
	why     int32    // the node the fast path declined at (-1: none), for tests
}

// export is one export of the module: the exported name and the local
// binding its getter reads.
type export struct{ name, local string }

// action is what the walk does with a node of some kind.
type action func(s *stripper, i int32) bool

// fieldOf caches the grammar's field ids the walk uses.
type fields struct {
	declaration, value, source, name, alias, returnType, pattern, body uint16
}

// defaultLocal is the binding an `export default <expression>` is kept in;
// like esbuild's `<file>_default`, a name the source cannot use (the fast
// path declines a source that mentions it).
const defaultLocal = "__default"

// reservedNames are the names the fast path adds to a module body.
var reservedNames = [][]byte{[]byte(defaultLocal), []byte("__agentos")}

// strip returns the wrapped module for src, or ok false when the fast path
// declines (the caller MUST then use esbuild).
func strip(path string, src []byte) (js string, ok bool) {
	for _, r := range reservedNames {
		if bytes.Contains(src, r) {
			return "", false
		}
	}
	t := tsparse.Shared(src)
	if t == nil || t.HasError {
		return "", false
	}
	s := &stripper{t: t, out: bytes.Clone(src), why: -1}
	if !s.walk(0) {
		return "", false
	}
	return s.module(path), true
}

// walk handles node i by its kind: the allow-list is the table of actions.
func (s *stripper) walk(i int32) bool {
	n := &s.t.Nodes[i]
	if !n.Named {
		return s.token(i)
	}
	act, ok := actions()[s.t.Type(i)]
	if ok && act(s, i) {
		return true
	}
	if s.why < 0 {
		s.why = i // the innermost node that declined (or is not on the allow-list)
	}
	return false
}

// children walks node i's children.
func (s *stripper) children(i int32) bool {
	for c := range s.t.Children(i) {
		if !s.walk(c) {
			return false
		}
	}
	return true
}

// blank replaces bytes [from, to) of the output with spaces, keeping line
// breaks (and so every line and byte column of the rest).
func (s *stripper) blank(from, to uint32) {
	for k := from; k < to; k++ {
		if c := s.out[k]; c != '\n' && c != '\r' {
			s.out[k] = ' '
		}
	}
}

// blankNode erases node i whole.
func (s *stripper) blankNode(i int32) {
	s.blank(s.t.Nodes[i].Start, s.t.Nodes[i].End)
}

// tsTokens are the anonymous tokens that are TypeScript only where they
// are children of tsTokenParents: `readonly x`, `x?:`, `x!:`, `override`,
// `declare`, `abstract`.
var (
	tsTokens       = map[string]bool{"readonly": true, "?": true, "!": true, "override": true, "declare": true, "abstract": true}
	tsTokenParents = map[string]bool{"public_field_definition": true, "method_definition": true, "optional_parameter": true,
		"variable_declarator": true, "abstract_class_declaration": true}
)

// laterTokens are keywords of syntax newer than ES2022 (explicit resource
// management, auto-accessors), which esbuild lowers.
var laterTokens = map[string]bool{"using": true, "accessor": true}

// token handles an anonymous token: a TypeScript modifier is erased; `!`,
// `?` and the keywords elsewhere are JavaScript.
func (s *stripper) token(i int32) bool {
	n := s.t.Nodes[i]
	if laterTokens[s.t.Type(i)] {
		return false
	}
	if tsTokens[s.t.Type(i)] && n.Parent >= 0 && tsTokenParents[s.t.Type(n.Parent)] {
		s.blankNode(i)
	}
	return true
}

// afterErasure reports whether the code after an erasure ending at byte
// end reads the same with the erased text gone: a line break followed by a
// token that would continue the expression (`(`, `[`, a template, an
// operator) is refused, since in TypeScript the type ended the statement.
func (s *stripper) afterErasure(end uint32) bool {
	sawBreak := false
	for k := int(end); k < len(s.out); k++ {
		switch c := s.out[k]; c {
		case ' ', '\t', '\r':
		case '\n':
			sawBreak = true
		default:
			return !sawBreak || bytes.IndexByte([]byte("([`+-/*,.?<=!"), c) < 0
		}
	}
	return true
}
