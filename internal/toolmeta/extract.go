package toolmeta

import (
	"encoding/json"
	"strings"
	"sync"

	"github.com/agentos-run/agentos/internal/lazyre"
	"github.com/agentos-run/agentos/internal/tsparse"
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

// Extract reads the description, tags and parameters schema of a tool from
// its source. It never fails and never panics: on a source tree-sitter can
// only partly parse it returns what it found, falling back to a regular
// expression for the description.
//
// The source is parsed by the shared front end (tsparse.Shared): a source
// just checked is not parsed again.
func Extract(src []byte) Meta { return extract(src, true) }

// extract is Extract; encode false leaves Meta.Parameters nil (ParamsOf
// needs the schema, not its JSON).
func extract(src []byte, encode bool) Meta {
	var m Meta
	t := tsparse.Shared(src)
	broken := true
	if t != nil {
		broken = t.HasError
		x := extractor{t: t, f: fields(), encode: encode}
		x.run(&m)
	}
	if broken && m.Description == "" && len(m.Tags) == 0 {
		// Parse errors can swallow the leading comment into an ERROR node:
		// take the first JSDoc comment of the file as written.
		m.Description, m.Tags = firstJSDoc(src)
	}
	return m
}

// firstJSDoc is the description and tags of the first JSDoc comment in
// src, found by a regular expression.
func firstJSDoc(src []byte) (desc string, tags []string) {
	for _, loc := range jsdocRE().FindAllIndex(src, 64) {
		if c := string(src[loc[0]:loc[1]]); isJSDoc(c) {
			desc, tags, _ = parseJSDoc(c)
			return desc, tags
		}
	}
	return "", nil
}

var jsdocRE = lazyre.New(`(?s)/\*\*.*?\*/`)

// isJSDoc reports whether the comment c is a JSDoc comment: it starts with
// exactly two stars, as TypeScript says ("/*** banner ***/" is not).
func isJSDoc(c string) bool {
	return strings.HasPrefix(c, "/**") && !strings.HasPrefix(c, "/***") && c != "/**/"
}

// fieldIDs are the grammar fields the extractor follows.
type fieldIDs struct {
	name, value, declaration, parameters, parameter, pattern, typ,
	left, key, body, typeArguments uint16
}

// fields is looked up on first use, not at package initialisation.
var fields = sync.OnceValue(func() fieldIDs {
	f := tsparse.Field
	return fieldIDs{
		name: f("name"), value: f("value"), declaration: f("declaration"),
		parameters: f("parameters"), parameter: f("parameter"), pattern: f("pattern"),
		typ: f("type"), left: f("left"), key: f("key"), body: f("body"),
		typeArguments: f("type_arguments"),
	}
})

// none is the index of no node.
const none = int32(-1)

// extractor walks one parsed source.
type extractor struct {
	t *tsparse.Tree
	f fieldIDs
	// top are the root's named children (the top-level statements and
	// comments), in order.
	top []int32
	// types are the file's top-level interfaces and type aliases, by name,
	// for parameter types declared apart (`args: Args`).
	types map[string]int32
	// encode: marshal the parameters' schema into Meta.Parameters.
	encode bool
}

func (x *extractor) text(n int32) string   { return x.t.Text(n) }
func (x *extractor) typeOf(n int32) string { return x.t.Type(n) }

// field is node n's child in field f, or none (n itself may be none).
func (x *extractor) field(n int32, f uint16) int32 {
	if n < 0 {
		return none
	}
	return x.t.ChildByField(n, f)
}

// run fills m: the description and tags of the tool's JSDoc, and the
// schema of the default export's parameter.
func (x *extractor) run(m *Meta) {
	export := x.scanTop()
	fn, fnDecl := x.exportedFunction(export)
	var paramDocs map[string]string
	if doc := x.description(export, fnDecl); doc != "" {
		m.Description, m.Tags, paramDocs = parseJSDoc(doc)
	}
	if fn < 0 {
		return
	}
	m.params, m.declared = x.paramSchema(fn, paramDocs)
	if m.params == nil || !x.encode {
		// Not marshalled, the schema is still one that marshals: its
		// numbers are finite (numberLiteral), the rest strings and bools.
		return
	}
	if b, err := json.Marshal(m.params); err == nil {
		m.Parameters = b
	} else {
		m.params = nil
	}
}

// scanTop fills x.top and x.types and returns the index in x.top of the
// first `export default` statement, or -1.
func (x *extractor) scanTop() (export int) {
	export = -1
	for c := range x.t.NamedChildren(0) {
		x.top = append(x.top, c)
		switch x.typeOf(c) {
		case "export_statement":
			if export < 0 && x.t.HasToken(c, "default") {
				export = len(x.top) - 1
			}
		case "interface_declaration", "type_alias_declaration":
			x.declareType(c)
		}
	}
	return export
}

// declareType records the interface or type alias c by its name (the
// first of a name wins).
func (x *extractor) declareType(c int32) {
	name := x.field(c, x.f.name)
	if name < 0 {
		return
	}
	if x.types == nil {
		x.types = map[string]int32{}
	}
	if _, dup := x.types[x.text(name)]; !dup {
		x.types[x.text(name)] = c
	}
}

// exportedFunction is the node the default export (x.top[export]) is, and,
// when it exports a function by name, the statement declaring it (-1: none).
func (x *extractor) exportedFunction(export int) (fn, decl int32) {
	if export < 0 {
		return none, none
	}
	stmt := x.top[export]
	fn = x.field(stmt, x.f.declaration)
	if fn < 0 {
		fn = x.field(stmt, x.f.value)
	}
	if fn >= 0 && x.typeOf(fn) == "identifier" {
		return x.lookupFunction(x.text(fn))
	}
	return fn, none
}

// description is the tool's JSDoc: the one right before the default
// export, else right before the declaration it exports by name, else the
// first JSDoc before the first statement.
func (x *extractor) description(export int, fnDecl int32) string {
	if export >= 0 {
		if doc := x.jsdocBefore(export); doc != "" {
			return doc
		}
	}
	if fnDecl >= 0 {
		for i, c := range x.top {
			if c == fnDecl {
				if doc := x.jsdocBefore(i); doc != "" {
					return doc
				}
				break
			}
		}
	}
	return x.leadingJSDoc()
}

// leadingJSDoc is the first JSDoc among the comments that open the file.
func (x *extractor) leadingJSDoc() string {
	for _, c := range x.top {
		if x.typeOf(c) != "comment" {
			break
		}
		if t := x.text(c); isJSDoc(t) {
			return t
		}
	}
	return ""
}

// jsdocBefore returns the JSDoc comment among the comments right before
// x.top[i] (the closest one), or "".
func (x *extractor) jsdocBefore(i int) string {
	for j := i - 1; j >= 0; j-- {
		c := x.top[j]
		if x.typeOf(c) != "comment" {
			return ""
		}
		if t := x.text(c); isJSDoc(t) {
			return t
		}
	}
	return ""
}

// lookupFunction finds the top-level function named name: a function
// declaration, or a const/let/var bound to a function or arrow function.
// It returns the function node and the statement declaring it.
func (x *extractor) lookupFunction(name string) (fn, stmt int32) {
	for _, c := range x.top {
		switch x.typeOf(c) {
		case "function_declaration", "generator_function_declaration":
			if id := x.field(c, x.f.name); id >= 0 && x.text(id) == name {
				return c, c
			}
		case "lexical_declaration", "variable_declaration":
			if v := x.boundValue(c, name); v >= 0 {
				return v, c
			}
		}
	}
	return none, none
}

// boundValue is the value the declaration statement decl binds to name,
// or none.
func (x *extractor) boundValue(decl int32, name string) int32 {
	for d := range x.t.NamedChildren(decl) {
		if x.typeOf(d) != "variable_declarator" {
			continue
		}
		id, v := x.field(d, x.f.name), x.field(d, x.f.value)
		if id >= 0 && v >= 0 && x.text(id) == name {
			return v
		}
	}
	return none
}

// functionTypes are the grammar's nodes whose first parameter describes a
// tool's arguments.
var functionTypes = map[string]bool{
	"function_declaration": true, "function_expression": true, "function": true, "arrow_function": true,
	"generator_function_declaration": true, "generator_function": true,
}

// paramSchema returns the JSON Schema of fn's first parameter, or nil when
// fn is not a function or its first parameter's type is not an object type
// the file declares; declared reports that the schema comes from a type
// annotation rather than an untyped destructuring pattern.
func (x *extractor) paramSchema(fn int32, docs map[string]string) (s *schema, declared bool) {
	if !functionTypes[x.typeOf(fn)] {
		return nil, false
	}
	param := x.firstParam(fn)
	if param < 0 {
		return nil, false
	}
	var argName string
	switch x.typeOf(param) {
	case "required_parameter", "optional_parameter":
		s, declared, argName = x.parameterSchema(param)
	}
	if s == nil || s.Type != "object" {
		return nil, false
	}
	s.describe(argName, docs)
	return s, declared
}

// firstParam is fn's first parameter: the first named child of its
// parameter list, else its single parameter (`x => ...`), or none.
func (x *extractor) firstParam(fn int32) int32 {
	if ps := x.field(fn, x.f.parameters); ps >= 0 {
		return x.t.FirstNamedChild(ps)
	}
	return x.field(fn, x.f.parameter)
}

// parameterSchema is the schema of a required or optional parameter: its
// declared type's, else its untyped destructuring pattern's; argName is
// its name when it is a plain identifier.
func (x *extractor) parameterSchema(param int32) (s *schema, declared bool, argName string) {
	pat := x.field(param, x.f.pattern)
	patType := ""
	if pat >= 0 {
		patType = x.typeOf(pat)
	}
	if patType == "identifier" {
		argName = x.text(pat)
	}
	if t := x.field(param, x.f.typ); t >= 0 {
		return x.schemaOf(t, 0, nil), true, argName
	}
	if patType == "object_pattern" {
		return x.patternSchema(pat), false, argName
	}
	return nil, false, argName
}

// describe gives the properties of s without a description the one the
// JSDoc's `@param argName.property` says.
func (s *schema) describe(argName string, docs map[string]string) {
	if argName == "" || len(docs) == 0 {
		return
	}
	for i := range s.Properties {
		p := &s.Properties[i]
		if d := docs[argName+"."+p.Name]; d != "" && p.Schema.Description == "" {
			p.Schema.Description = d
		}
	}
}

// patternSchema is the schema of an untyped destructuring parameter
// `({ a, b = 1 })`: its names, of any type; those without a default are
// required.
func (x *extractor) patternSchema(pat int32) *schema {
	s := &schema{Type: "object"}
	for c := range x.t.NamedChildren(pat) {
		name, required := x.patternEntry(c)
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

// patternEntry is the property name an entry of an object pattern binds
// ("" for none) and whether it is required (it has no default).
func (x *extractor) patternEntry(c int32) (name string, required bool) {
	switch x.typeOf(c) {
	case "shorthand_property_identifier_pattern":
		return x.text(c), true
	case "object_assignment_pattern":
		if l := x.field(c, x.f.left); l >= 0 {
			name = x.text(l)
		}
		return name, false
	case "pair_pattern":
		if k := x.field(c, x.f.key); k >= 0 {
			name = propName(x.text(k))
		}
		v := x.field(c, x.f.value)
		return name, v < 0 || x.typeOf(v) != "assignment_pattern"
	}
	return "", true
}
