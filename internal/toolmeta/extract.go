package toolmeta

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"unicode"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/typescript/typescript"

	"github.com/agentos-run/agentos/internal/lazyre"
)

// Meta is what Extract finds in a tool's source.
type Meta struct {
	// Description is the text of the leading JSDoc comment (Tool.Description).
	Description string
	// Tags are the JSDoc's @tag words (Tool.Tags).
	Tags []string
	// Parameters is the JSON Schema of the default export's first
	// parameter; nil when its type is not declared (Tool.Parameters).
	Parameters json.RawMessage
	// params is parameters before marshalling; declared says it comes from
	// a type annotation (not from an untyped destructuring pattern), so
	// arguments may be validated against it (see Params).
	params   *schema
	declared bool
}

// maxSchemaDepth bounds the nesting of the parameters schema (and of type
// alias resolution), so a pathological or self-referential type cannot
// recurse without end.
const maxSchemaDepth = 16

var language = typescript.GetLanguage()

// parsers pools tree-sitter parsers: a parser is not safe for concurrent
// use, and making one costs more than parsing a small tool.
var parsers = sync.Pool{New: func() any {
	p := sitter.NewParser()
	p.SetLanguage(language)
	return p
}}

// Extract reads the description, tags and parameters schema of a tool from
// its source. It never fails and never panics: on a source tree-sitter can
// only partly parse it returns what it found, falling back to a regular
// expression for the description.
func Extract(src []byte) Meta {
	var m Meta
	p := parsers.Get().(*sitter.Parser)
	tree, err := p.ParseCtx(context.Background(), nil, src)
	parsers.Put(p)
	broken := true
	if err == nil && tree != nil {
		root := tree.RootNode()
		broken = root.HasError()
		x := extractor{src: src, root: root}
		x.run(&m)
		tree.Close()
	}
	if broken && m.Description == "" && len(m.Tags) == 0 {
		// Parse errors can swallow the leading comment into an ERROR node:
		// take the first JSDoc comment of the file as written.
		for _, loc := range jsdocRE().FindAllIndex(src, 64) {
			if c := string(src[loc[0]:loc[1]]); isJSDoc(c) {
				m.Description, m.Tags, _ = parseJSDoc(c)
				break
			}
		}
	}
	return m
}

var jsdocRE = lazyre.New(`(?s)/\*\*.*?\*/`)

// isJSDoc reports whether the comment c is a JSDoc comment: it starts with
// exactly two stars, as TypeScript says ("/*** banner ***/" is not).
func isJSDoc(c string) bool {
	return strings.HasPrefix(c, "/**") && !strings.HasPrefix(c, "/***") && c != "/**/"
}

// extractor walks one parsed source.
type extractor struct {
	src  []byte
	root *sitter.Node
	// types are the file's top-level interfaces and type aliases, by name,
	// for parameter types declared apart (`args: Args`).
	types map[string]*sitter.Node
}

func (x *extractor) text(n *sitter.Node) string { return n.Content(x.src) }

func (x *extractor) run(m *Meta) {
	root := x.root
	n := int(root.NamedChildCount())
	var export, firstStmt *sitter.Node
	exportIdx := -1
	for i := 0; i < n; i++ {
		c := root.NamedChild(i)
		switch c.Type() {
		case "comment":
			continue
		case "export_statement":
			if export == nil && isDefaultExport(c) {
				export, exportIdx = c, i
			}
		case "interface_declaration", "type_alias_declaration":
			if name := c.ChildByFieldName("name"); name != nil {
				if x.types == nil {
					x.types = map[string]*sitter.Node{}
				}
				if _, dup := x.types[x.text(name)]; !dup {
					x.types[x.text(name)] = c
				}
			}
		}
		if firstStmt == nil {
			firstStmt = c
		}
	}

	// The function the default export is.
	var fn *sitter.Node
	var fnDecl *sitter.Node // the statement declaring fn when exported by name
	if export != nil {
		fn = export.ChildByFieldName("declaration")
		if fn == nil {
			fn = export.ChildByFieldName("value")
		}
		if fn != nil && fn.Type() == "identifier" {
			fn, fnDecl = x.lookupFunction(x.text(fn))
		}
	}

	// The description: the JSDoc right before the default export, else right
	// before the declaration it exports by name, else the first JSDoc before
	// the first statement.
	var doc string
	if export != nil {
		doc = x.jsdocBefore(exportIdx)
	}
	if doc == "" && fnDecl != nil {
		for i := 0; i < n; i++ {
			if root.NamedChild(i).Equal(fnDecl) {
				doc = x.jsdocBefore(i)
				break
			}
		}
	}
	if doc == "" {
		for i := 0; i < n; i++ {
			c := root.NamedChild(i)
			if c.Type() != "comment" {
				break
			}
			if t := x.text(c); isJSDoc(t) {
				doc = t
				break
			}
		}
	}
	var paramDocs map[string]string
	if doc != "" {
		m.Description, m.Tags, paramDocs = parseJSDoc(doc)
	}

	if fn != nil {
		m.params, m.declared = x.paramSchema(fn, paramDocs)
		if m.params != nil {
			if b, err := json.Marshal(m.params); err == nil {
				m.Parameters = b
			} else {
				m.params = nil
			}
		}
	}
}

// isDefaultExport reports whether an export_statement is `export default`.
func isDefaultExport(n *sitter.Node) bool {
	for i := 0; i < int(n.ChildCount()); i++ {
		if c := n.Child(i); !c.IsNamed() && c.Type() == "default" {
			return true
		}
	}
	return false
}

// lookupFunction finds the top-level function named name: a function
// declaration, or a const/let/var bound to a function or arrow function.
// It returns the function node and the statement declaring it.
func (x *extractor) lookupFunction(name string) (fn, stmt *sitter.Node) {
	for i := 0; i < int(x.root.NamedChildCount()); i++ {
		c := x.root.NamedChild(i)
		switch c.Type() {
		case "function_declaration", "generator_function_declaration":
			if id := c.ChildByFieldName("name"); id != nil && x.text(id) == name {
				return c, c
			}
		case "lexical_declaration", "variable_declaration":
			for j := 0; j < int(c.NamedChildCount()); j++ {
				d := c.NamedChild(j)
				if d.Type() != "variable_declarator" {
					continue
				}
				id, v := d.ChildByFieldName("name"), d.ChildByFieldName("value")
				if id != nil && v != nil && x.text(id) == name {
					return v, c
				}
			}
		}
	}
	return nil, nil
}

// jsdocBefore returns the JSDoc comment among the comments right before the
// root's named child i (the closest one), or "".
func (x *extractor) jsdocBefore(i int) string {
	for j := i - 1; j >= 0; j-- {
		c := x.root.NamedChild(j)
		if c.Type() != "comment" {
			return ""
		}
		if t := x.text(c); isJSDoc(t) {
			return t
		}
	}
	return ""
}

// paramSchema returns the JSON Schema of fn's first parameter, or nil when
// fn is not a function or its first parameter's type is not an object type
// the file declares; declared reports that the schema comes from a type
// annotation rather than an untyped destructuring pattern.
func (x *extractor) paramSchema(fn *sitter.Node, docs map[string]string) (s *schema, declared bool) {
	switch fn.Type() {
	case "function_declaration", "function_expression", "function", "arrow_function",
		"generator_function_declaration", "generator_function":
	default:
		return nil, false
	}
	var param *sitter.Node
	if ps := fn.ChildByFieldName("parameters"); ps != nil {
		if ps.NamedChildCount() > 0 {
			param = ps.NamedChild(0)
		}
	} else if p := fn.ChildByFieldName("parameter"); p != nil {
		param = p // `x => ...`: an untyped identifier
	}
	if param == nil {
		return nil, false
	}
	var argName string
	switch param.Type() {
	case "required_parameter", "optional_parameter":
		pat := param.ChildByFieldName("pattern")
		if pat != nil && pat.Type() == "identifier" {
			argName = x.text(pat)
		}
		if t := param.ChildByFieldName("type"); t != nil {
			s, declared = x.schemaOf(t, 0, nil), true
		} else if pat != nil && pat.Type() == "object_pattern" {
			s = x.patternSchema(pat)
		}
	}
	if s == nil || s.Type != "object" {
		return nil, false
	}
	if argName != "" && len(docs) > 0 {
		for i := range s.Properties {
			p := &s.Properties[i]
			if d := docs[argName+"."+p.Name]; d != "" && p.Schema.Description == "" {
				p.Schema.Description = d
			}
		}
	}
	return s, declared
}

// patternSchema is the schema of an untyped destructuring parameter
// `({ a, b = 1 })`: its names, of any type; those without a default are
// required.
func (x *extractor) patternSchema(pat *sitter.Node) *schema {
	s := &schema{Type: "object"}
	for i := 0; i < int(pat.NamedChildCount()); i++ {
		c := pat.NamedChild(i)
		var name string
		required := true
		switch c.Type() {
		case "shorthand_property_identifier_pattern":
			name = x.text(c)
		case "object_assignment_pattern":
			if l := c.ChildByFieldName("left"); l != nil {
				name = x.text(l)
			}
			required = false
		case "pair_pattern":
			if k := c.ChildByFieldName("key"); k != nil {
				name = propName(x.text(k))
			}
			if v := c.ChildByFieldName("value"); v != nil && v.Type() == "assignment_pattern" {
				required = false
			}
		}
		if name == "" {
			continue
		}
		s.Properties = append(s.Properties, property{Name: name, Schema: &schema{}})
		if required {
			s.Required = append(s.Required, name)
		}
	}
	return s
}

// schemaOf converts a TypeScript type node into a JSON Schema. Types it
// cannot express (or does not know) become {}, which accepts anything.
// seen holds the type aliases being expanded, against cycles.
func (x *extractor) schemaOf(t *sitter.Node, depth int, seen []string) *schema {
	if t == nil || depth > maxSchemaDepth {
		return &schema{}
	}
	switch t.Type() {
	case "type_annotation", "parenthesized_type", "readonly_type", "opting_type_annotation":
		if t.NamedChildCount() == 0 {
			return &schema{}
		}
		return x.schemaOf(t.NamedChild(int(t.NamedChildCount())-1), depth+1, seen)
	case "predefined_type":
		switch x.text(t) {
		case "number":
			return &schema{Type: "number"}
		case "string":
			return &schema{Type: "string"}
		case "boolean":
			return &schema{Type: "boolean"}
		case "object":
			return &schema{Type: "object"}
		case "null":
			return &schema{Type: "null"}
		}
		return &schema{}
	case "literal_type":
		return x.literal(t)
	case "array_type":
		if t.NamedChildCount() == 0 {
			return &schema{Type: "array"}
		}
		return &schema{Type: "array", Items: x.schemaOf(t.NamedChild(0), depth+1, seen)}
	case "tuple_type":
		return &schema{Type: "array"}
	case "object_type", "interface_body":
		return x.objectSchema(t, depth, seen)
	case "union_type":
		return x.unionSchema(t, depth, seen)
	case "generic_type":
		return x.genericSchema(t, depth, seen)
	case "type_identifier":
		return x.namedSchema(x.text(t), depth, seen)
	}
	return &schema{}
}

func (x *extractor) literal(t *sitter.Node) *schema {
	if t.NamedChildCount() == 0 {
		return &schema{}
	}
	v := t.NamedChild(0)
	switch v.Type() {
	case "string":
		s := x.text(v)
		if len(s) >= 2 {
			s = s[1 : len(s)-1]
		}
		return &schema{Type: "string", Enum: []any{s}}
	case "number":
		f, err := strconv.ParseFloat(strings.ReplaceAll(x.text(v), "_", ""), 64)
		if err != nil {
			return &schema{Type: "number"}
		}
		return &schema{Type: "number", Enum: []any{f}}
	case "true":
		return &schema{Type: "boolean", Enum: []any{true}}
	case "false":
		return &schema{Type: "boolean", Enum: []any{false}}
	case "null":
		return &schema{Type: "null"}
	case "undefined":
		return &schema{}
	case "unary_expression": // -1
		f, err := strconv.ParseFloat(strings.ReplaceAll(x.text(v), " ", ""), 64)
		if err != nil {
			return &schema{Type: "number"}
		}
		return &schema{Type: "number", Enum: []any{f}}
	}
	return &schema{}
}

// objectSchema converts an object type literal or interface body: property
// signatures become properties (required unless marked `?`), a string
// index signature additionalProperties; a JSDoc comment before a property
// is its description.
func (x *extractor) objectSchema(t *sitter.Node, depth int, seen []string) *schema {
	s := &schema{Type: "object"}
	var doc string
	for i := 0; i < int(t.NamedChildCount()); i++ {
		c := t.NamedChild(i)
		switch c.Type() {
		case "comment":
			if txt := x.text(c); isJSDoc(txt) {
				doc, _, _ = parseJSDoc(txt)
			}
			continue
		case "property_signature":
			nameNode := c.ChildByFieldName("name")
			if nameNode == nil {
				break
			}
			name := propName(x.text(nameNode))
			optional := false
			for j := 0; j < int(c.ChildCount()); j++ {
				if k := c.Child(j); !k.IsNamed() && k.Type() == "?" {
					optional = true
				}
			}
			ps := x.schemaOf(c.ChildByFieldName("type"), depth+1, seen)
			if doc != "" {
				ps.Description = doc
			}
			s.Properties = append(s.Properties, property{Name: name, Schema: ps})
			if !optional {
				s.Required = append(s.Required, name)
			}
		case "index_signature":
			// [key: string]: T
			if n := c.NamedChildCount(); n > 0 {
				s.AdditionalProperties = x.schemaOf(c.NamedChild(int(n)-1), depth+1, seen)
			}
		}
		doc = ""
	}
	return s
}

// propName unquotes a property name written as a string ('a-b': number).
func propName(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// unionSchema converts a union: undefined and null members are dropped
// (an optional value), a union of literals of one type becomes an enum,
// anything else anyOf.
func (x *extractor) unionSchema(t *sitter.Node, depth int, seen []string) *schema {
	var members []*schema
	var nullable, optional bool
	var walk func(n *sitter.Node)
	walk = func(n *sitter.Node) {
		for i := 0; i < int(n.NamedChildCount()); i++ {
			c := n.NamedChild(i)
			if c.Type() == "union_type" {
				walk(c)
				continue
			}
			if c.Type() == "predefined_type" && (x.text(c) == "undefined" || x.text(c) == "null" || x.text(c) == "void") {
				nullable = nullable || x.text(c) == "null"
				optional = optional || x.text(c) != "null"
				continue
			}
			if c.Type() == "literal_type" && c.NamedChildCount() > 0 {
				if k := c.NamedChild(0).Type(); k == "null" || k == "undefined" {
					nullable = nullable || k == "null"
					optional = optional || k == "undefined"
					continue
				}
			}
			members = append(members, x.schemaOf(c, depth+1, seen))
		}
	}
	walk(t)
	switch len(members) {
	case 0:
		return &schema{}
	case 1:
		members[0].nullable = members[0].nullable || nullable
		members[0].optional = members[0].optional || optional
		return members[0]
	}
	enum := &schema{Type: members[0].Type, nullable: nullable, optional: optional}
	for _, m := range members {
		if len(m.Enum) == 0 || m.Type != enum.Type {
			enum = nil
			break
		}
		enum.Enum = append(enum.Enum, m.Enum...)
	}
	if enum != nil {
		if enum.Type == "boolean" && len(enum.Enum) == 2 {
			enum.Enum = nil // true | false
		}
		return enum
	}
	return &schema{AnyOf: members, nullable: nullable, optional: optional}
}

// genericSchema knows Array<T>, ReadonlyArray<T>, Record<K, V>,
// Readonly/Partial/Required<T>; other generics are {}.
func (x *extractor) genericSchema(t *sitter.Node, depth int, seen []string) *schema {
	name := t.ChildByFieldName("name")
	args := t.ChildByFieldName("type_arguments")
	var argv []*sitter.Node
	if args != nil {
		for i := 0; i < int(args.NamedChildCount()); i++ {
			if a := args.NamedChild(i); a.Type() != "comment" {
				argv = append(argv, a)
			}
		}
	}
	if name == nil {
		return &schema{}
	}
	switch x.text(name) {
	case "Array", "ReadonlyArray":
		if len(argv) == 1 {
			return &schema{Type: "array", Items: x.schemaOf(argv[0], depth+1, seen)}
		}
		return &schema{Type: "array"}
	case "Record":
		if len(argv) == 2 {
			return &schema{Type: "object", AdditionalProperties: x.schemaOf(argv[1], depth+1, seen)}
		}
		return &schema{Type: "object"}
	case "Readonly", "Required", "Partial":
		if len(argv) != 1 {
			return &schema{}
		}
		s := x.schemaOf(argv[0], depth+1, seen)
		switch x.text(name) {
		case "Partial":
			s.Required = nil
		case "Required":
			s.Required = nil
			for _, p := range s.Properties {
				s.Required = append(s.Required, p.Name)
			}
		}
		return s
	}
	return &schema{}
}

// namedSchema resolves a type name to the file's interface or type alias of
// that name; unknown names (imported types, Date, ...) are {}.
func (x *extractor) namedSchema(name string, depth int, seen []string) *schema {
	decl, ok := x.types[name]
	if !ok {
		return &schema{}
	}
	for _, s := range seen {
		if s == name {
			return &schema{} // recursive type
		}
	}
	seen = append(seen[:len(seen):len(seen)], name)
	if decl.Type() == "interface_declaration" {
		if body := decl.ChildByFieldName("body"); body != nil {
			return x.objectSchema(body, depth+1, seen)
		}
		return &schema{Type: "object"}
	}
	return x.schemaOf(decl.ChildByFieldName("value"), depth+1, seen)
}

// schema is the subset of JSON Schema tool parameters need. Properties keep
// their declaration order.
type schema struct {
	Type                 string     `json:"type,omitempty"`
	Description          string     `json:"description,omitempty"`
	Properties           properties `json:"properties,omitempty"`
	Required             []string   `json:"required,omitempty"`
	Items                *schema    `json:"items,omitempty"`
	AdditionalProperties *schema    `json:"additionalProperties,omitempty"`
	Enum                 []any      `json:"enum,omitempty"`
	AnyOf                []*schema  `json:"anyOf,omitempty"`

	// nullable and optional say the TypeScript type was a union with null
	// (resp. undefined or void), which the schema drops: null (resp. an
	// absent property) is then valid. Not part of meta.json.
	nullable bool
	optional bool
}

type property struct {
	Name   string
	Schema *schema
}

// properties marshals as a JSON object in declaration order.
type properties []property

func (ps properties) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(p.Name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(p.Schema)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// parseJSDoc splits a /** ... */ comment into its description (the text
// outside block tags, whitespace collapsed), its tags (@tag / @tags lines,
// comma or space separated, lowercased, deduplicated) and the descriptions
// of `@param name description` tags by parameter name.
//
// A block tag starts at an @ that begins a line or follows a space. A @tag
// line ends at the end of its line; other block tags (@param, @returns,
// @example ...) run until the next block tag, as JSDoc says, so their text
// never leaks into the description.
func parseJSDoc(c string) (desc string, tags []string, params map[string]string) {
	c = strings.TrimPrefix(c, "/**")
	c = strings.TrimSuffix(c, "*/")
	var d strings.Builder
	addDesc := func(s string) {
		s = inlineTags(s)
		for _, w := range strings.Fields(s) {
			if d.Len() > 0 {
				d.WriteByte(' ')
			}
			d.WriteString(w)
		}
	}
	seenTag := map[string]bool{}
	addTags := func(s string) {
		for _, t := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
			t = strings.ToLower(strings.TrimLeft(t, "#"))
			if t != "" && !seenTag[t] {
				seenTag[t] = true
				tags = append(tags, t)
			}
		}
	}
	cur := ""          // the block tag whose text continues on the next line
	var curText string // its text so far (for @param)
	endTag := func() {
		if cur == "param" || cur == "arg" || cur == "argument" {
			name, text := paramDoc(curText)
			if name != "" && text != "" {
				if params == nil {
					params = map[string]string{}
				}
				params[name] = text
			}
		}
		cur, curText = "", ""
	}
	for _, line := range strings.Split(c, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimSpace(strings.TrimPrefix(line, "*"))
		if strings.Trim(line, "*") == "" {
			line = "" // a rule of stars
		}
		segs := splitTags(line)
		for i, seg := range segs {
			if i == 0 && !strings.HasPrefix(seg, "@") {
				// Text before any tag on this line.
				if cur == "" || cur == "description" {
					addDesc(seg)
				} else {
					curText += " " + seg
				}
				continue
			}
			endTag()
			name, body := seg[1:], ""
			if j := strings.IndexFunc(name, unicode.IsSpace); j >= 0 {
				name, body = name[:j], strings.TrimSpace(name[j:])
			}
			switch strings.ToLower(name) {
			case "tag", "tags":
				addTags(body)
			case "description", "desc", "summary":
				addDesc(body)
				cur = "description"
			default:
				cur, curText = strings.ToLower(name), body
			}
		}
	}
	endTag()
	return d.String(), tags, params
}

// splitTags splits a JSDoc line before each block tag: an @ at the start or
// after a space, followed by a letter (`a@b.com` and `{@link x}` are text).
func splitTags(line string) []string {
	var segs []string
	start := 0
	for i := 0; i < len(line); i++ {
		if line[i] != '@' || i+1 >= len(line) || !isASCIILetter(line[i+1]) {
			continue
		}
		if i > 0 && line[i-1] != ' ' && line[i-1] != '\t' {
			continue
		}
		if s := strings.TrimSpace(line[start:i]); s != "" {
			segs = append(segs, s)
		}
		start = i
	}
	if s := strings.TrimSpace(line[start:]); s != "" {
		segs = append(segs, s)
	}
	return segs
}

func isASCIILetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

var inlineTagRE = lazyre.New(`\{@\w+\s+([^}|]*?)(?:\s*\|\s*([^}]*))?\}`)

// inlineTags replaces {@link target|label} by its label (or target).
func inlineTags(s string) string {
	if !strings.Contains(s, "{@") {
		return s
	}
	return inlineTagRE().ReplaceAllStringFunc(s, func(m string) string {
		sm := inlineTagRE().FindStringSubmatch(m)
		if sm[2] != "" {
			return sm[2]
		}
		return sm[1]
	})
}

// paramDoc splits a @param body "{type} args.n - the index" into its name
// and description. Optional names ([args.n=1]) are unwrapped.
func paramDoc(s string) (name, text string) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "{") {
		depth := 0
		for i, r := range s {
			if r == '{' {
				depth++
			} else if r == '}' {
				depth--
				if depth == 0 {
					s = strings.TrimSpace(s[i+1:])
					break
				}
			}
		}
		if depth != 0 {
			return "", ""
		}
	}
	name, text, _ = strings.Cut(s, " ")
	name = strings.Trim(name, "[]")
	if i := strings.IndexByte(name, '='); i >= 0 {
		name = name[:i]
	}
	text = strings.TrimSpace(text)
	text = strings.TrimSpace(strings.TrimPrefix(text, "-"))
	return name, strings.Join(strings.Fields(text), " ")
}
