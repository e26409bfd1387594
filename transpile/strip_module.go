package transpile

import (
	"bytes"
	"sort"
	"strings"
)

// importStatement erases `import type ...`. Any other import declines:
// esbuild reads an imported binding through the module object at each use
// (a live binding), which a rewrite in place cannot give without scope
// analysis.
func (s *stripper) importStatement(i int32) bool {
	s.esm = true
	if s.t.HasToken(i, "type") {
		s.blankNode(i)
		return true
	}
	return false
}

// exportStatement turns an export into its CommonJS form: the `export`
// (and `default`) keywords are erased or replaced in place and the export
// is collected for the getters the module's first line defines, as
// esbuild's __export does. Re-exports (`from`), `export =` and
// `export as namespace` decline.
func (s *stripper) exportStatement(i int32) bool {
	t, f := s.t, fieldIDs()
	s.esm = true
	if t.ChildByField(i, f.source) >= 0 || t.HasToken(i, "=") || t.HasToken(i, "as") || t.HasToken(i, "*") {
		return false
	}
	if t.HasToken(i, "type") {
		s.blankNode(i) // export type { ... }
		return true
	}
	if d := t.ChildByField(i, f.declaration); d >= 0 {
		return s.exportDeclaration(i, d)
	}
	if v := t.ChildByField(i, f.value); v >= 0 && t.HasToken(i, "default") {
		return s.exportDefaultValue(i, v)
	}
	for c := range t.NamedChildren(i) {
		if t.Type(c) == "export_clause" {
			return s.exportClause(i, c)
		}
	}
	return false
}

// typeOnly are the declarations an export of which is erased whole.
var typeOnly = map[string]bool{"interface_declaration": true, "type_alias_declaration": true,
	"function_signature": true, "ambient_declaration": true}

// exportDeclaration handles `export [default] <declaration>`.
func (s *stripper) exportDeclaration(i, d int32) bool {
	t := s.t
	if typeOnly[t.Type(d)] {
		s.blankNode(i)
		return true
	}
	names, ok := s.declaredNames(d)
	if !ok {
		return false
	}
	if t.HasToken(i, "default") {
		if len(names) != 1 {
			return false
		}
		s.exports = append(s.exports, export{name: "default", local: names[0]})
	} else {
		for _, n := range names {
			s.exports = append(s.exports, export{name: n, local: n})
		}
	}
	s.blank(t.Nodes[i].Start, t.Nodes[d].Start)
	return s.walk(d)
}

// declaredNames are the bindings a declaration makes; a destructuring
// pattern declines.
func (s *stripper) declaredNames(d int32) ([]string, bool) {
	t, f := s.t, fieldIDs()
	switch t.Type(d) {
	case "function_declaration", "generator_function_declaration", "class_declaration", "abstract_class_declaration":
		n := t.ChildByField(d, f.name)
		return []string{t.Text(n)}, n >= 0
	case "lexical_declaration", "variable_declaration":
		var names []string
		for c := range t.NamedChildren(d) {
			if t.Type(c) != "variable_declarator" {
				continue
			}
			n := t.ChildByField(c, f.name)
			if n < 0 || t.Type(n) != "identifier" {
				return nil, false
			}
			names = append(names, t.Text(n))
		}
		return names, len(names) > 0
	}
	return nil, false
}

// exportDefaultValue handles `export default <expression>`: the keywords
// become `var __default=` in the same bytes (esbuild's
// `var <file>_default = <expression>`).
func (s *stripper) exportDefaultValue(i, v int32) bool {
	t := s.t
	if !defaultValueReadsAlike(t.Type(v), t.Text(v)) {
		return false
	}
	head := s.out[t.Nodes[i].Start:t.Nodes[v].Start]
	const decl = "var " + defaultLocal + "="
	if len(head) < len(decl) || bytes.IndexAny(head, "\n\r/") >= 0 {
		return false // no room, or a comment or line break inside
	}
	s.blank(t.Nodes[i].Start, t.Nodes[v].Start)
	copy(head, decl)
	s.exports = append(s.exports, export{name: "default", local: defaultLocal})
	if !s.walk(v) {
		return false
	}
	switch t.Type(v) {
	case "function_expression", "class", "generator_function", "arrow_function":
		// `export default function () {}` ends without a semicolon: as a
		// `var` initialiser, a next line starting with `(` would call it.
		return s.afterErasure(t.Nodes[v].End)
	}
	return true
}

// defaultValueReadsAlike reports whether `export default` followed by the
// text of a node of kind kind reads the same as an expression: tree-sitter
// reads `export default function () {}\n(0)` as a call, a module as a
// declaration and a statement.
func defaultValueReadsAlike(kind, text string) bool {
	switch kind {
	case "function_expression", "class", "generator_function":
		return true
	}
	for _, p := range []string{"function", "class", "async"} {
		if strings.HasPrefix(text, p) {
			return false
		}
	}
	return true
}

// exportClause handles `export { a, b as c }` (no `from`): erased, each
// specifier an export of a local binding.
func (s *stripper) exportClause(i, c int32) bool {
	t, f := s.t, fieldIDs()
	for sp := range t.NamedChildren(c) {
		if t.Type(sp) != "export_specifier" || t.HasToken(sp, "type") {
			continue
		}
		n := t.ChildByField(sp, f.name)
		if n < 0 || t.Type(n) != "identifier" {
			return false
		}
		name := t.Text(n)
		if a := t.ChildByField(sp, f.alias); a >= 0 {
			name = t.Text(a)
		}
		s.exports = append(s.exports, export{name: name, local: t.Text(n)})
	}
	s.blankNode(i)
	return true
}

// module wraps the stripped body. The wrapper and the export getters go on
// the body's first line, so every other line keeps its number and
// columns; the first line's tokens are mapped back by a small source map
// (see lineOneMap).
func (s *stripper) module(path string) string {
	var b strings.Builder
	b.Grow(len(s.out) + 512)
	b.WriteString(wrapPrefix)
	s.writeExports(&b)
	shift := b.Len()
	b.Write(s.out)
	b.WriteString(wrapSuffix)
	if m := s.lineOneMap(path, shift); m != "" {
		b.WriteString("\n//# sourceMappingURL=data:application/json;base64,")
		b.WriteString(m)
	}
	return b.String()
}

// writeExports writes what esbuild's CommonJS prelude does: getters for
// the exports (sorted by name, as esbuild sorts them) on an object that
// becomes module.exports with __esModule set. A module without exports
// gets none (its module.exports stays the object it was given), unless it
// is an ES module (it has an import or export, even of types only).
func (s *stripper) writeExports(b *strings.Builder) {
	if !s.esm {
		return
	}
	ex := s.exports
	sort.SliceStable(ex, func(a, c int) bool { return ex[a].name < ex[c].name })
	b.WriteString("var __agentos_exports = {};" + HelpersParam + ".__export(__agentos_exports, {")
	for k, e := range ex {
		if k > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteKey(e.name) + ": () => " + e.local)
	}
	b.WriteString("});module.exports = " + HelpersParam + ".__toCommonJS(__agentos_exports);")
}

// quoteKey writes an export name as an object key.
func quoteKey(name string) string {
	return `"` + name + `"`
}
