package toolmeta

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// schemaOf converts a TypeScript type node into a JSON Schema. Types it
// cannot express (or does not know) become {}, which accepts anything.
// seen holds the type aliases being expanded, against cycles.
func (x *extractor) schemaOf(t int32, depth int, seen []string) *schema {
	if t < 0 || depth > maxSchemaDepth {
		return &schema{}
	}
	switch x.typeOf(t) {
	case "type_annotation", "parenthesized_type", "readonly_type", "opting_type_annotation":
		return x.schemaOf(x.t.LastNamedChild(t), depth+1, seen)
	case "predefined_type":
		return predefinedSchema(x.text(t))
	case "literal_type":
		return x.literal(t)
	case "array_type":
		return x.arraySchema(x.t.FirstNamedChild(t), depth, seen)
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

// predefinedTypes are the predefined types whose JSON Schema type has
// their name.
var predefinedTypes = map[string]bool{"number": true, "string": true, "boolean": true, "object": true, "null": true}

// predefinedSchema is the schema of a predefined type (any, unknown,
// void ... are {}).
func predefinedSchema(name string) *schema {
	if predefinedTypes[name] {
		return &schema{Type: name}
	}
	return &schema{}
}

// arraySchema is the schema of an array of item (none: of anything).
func (x *extractor) arraySchema(item int32, depth int, seen []string) *schema {
	if item < 0 {
		return &schema{Type: "array"}
	}
	return &schema{Type: "array", Items: x.schemaOf(item, depth+1, seen)}
}

// literal is the schema of a literal type: its value as a one-member enum.
func (x *extractor) literal(t int32) *schema {
	v := x.t.FirstNamedChild(t)
	if v < 0 {
		return &schema{}
	}
	switch x.typeOf(v) {
	case "string":
		return &schema{Type: "string", Enum: []any{unquote(x.text(v))}}
	case "number":
		return numberLiteral(strings.ReplaceAll(x.text(v), "_", ""))
	case "unary_expression": // -1
		return numberLiteral(strings.ReplaceAll(x.text(v), " ", ""))
	}
	return keywordLiteral(x.typeOf(v))
}

// unquote strips a string literal's quotes.
func unquote(s string) string {
	if len(s) >= 2 {
		return s[1 : len(s)-1]
	}
	return s
}

// numberLiteral is the schema of the numeric literal s (a number when it
// does not parse).
func numberLiteral(s string) *schema {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return &schema{Type: "number"}
	}
	return &schema{Type: "number", Enum: []any{f}}
}

// keywordLiteral is the schema of the literal type true, false or null
// ({} for undefined and anything else).
func keywordLiteral(kw string) *schema {
	switch kw {
	case "true", "false":
		return &schema{Type: "boolean", Enum: []any{kw == "true"}}
	case "null":
		return &schema{Type: "null"}
	}
	return &schema{}
}

// objectSchema converts an object type literal or interface body: property
// signatures become properties (required unless marked `?`), a string
// index signature additionalProperties; a JSDoc comment before a property
// is its description.
func (x *extractor) objectSchema(t int32, depth int, seen []string) *schema {
	s := &schema{Type: "object"}
	var doc string
	for c := range x.t.NamedChildren(t) {
		switch x.typeOf(c) {
		case "comment":
			if txt := x.text(c); isJSDoc(txt) {
				doc, _, _ = parseJSDoc(txt)
			}
			continue
		case "property_signature":
			x.addProperty(s, c, doc, depth, seen)
		case "index_signature": // [key: string]: T
			if v := x.t.LastNamedChild(c); v >= 0 {
				s.AdditionalProperties = x.schemaOf(v, depth+1, seen)
			}
		}
		doc = ""
	}
	return s
}

// addProperty adds the property signature c to s, described by doc.
func (x *extractor) addProperty(s *schema, c int32, doc string, depth int, seen []string) {
	nameNode := x.field(c, x.f.name)
	if nameNode < 0 {
		return
	}
	name := propName(x.text(nameNode))
	ps := x.schemaOf(x.field(c, x.f.typ), depth+1, seen)
	if doc != "" {
		ps.Description = doc
	}
	s.Properties = append(s.Properties, property{Name: name, Schema: ps})
	if !x.t.HasToken(c, "?") {
		s.Required = append(s.Required, name)
	}
}

// propName unquotes a property name written as a string ('a-b': number).
func propName(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// union is a union type's members, flattened, without the null and
// undefined members, which say the value may be null (nullable) or absent
// (optional).
type union struct {
	members            []*schema
	nullable, optional bool
}

// unionSchema converts a union: undefined and null members are dropped
// (an optional value), a union of literals of one type becomes an enum,
// anything else anyOf.
func (x *extractor) unionSchema(t int32, depth int, seen []string) *schema {
	var u union
	x.collectUnion(&u, t, depth, seen)
	switch len(u.members) {
	case 0:
		return &schema{}
	case 1:
		m := u.members[0]
		m.nullable = m.nullable || u.nullable
		m.optional = m.optional || u.optional
		return m
	}
	if enum := u.enum(); enum != nil {
		return enum
	}
	return &schema{AnyOf: u.members, nullable: u.nullable, optional: u.optional}
}

// collectUnion adds the members of the union type t to u.
func (x *extractor) collectUnion(u *union, t int32, depth int, seen []string) {
	for c := range x.t.NamedChildren(t) {
		if x.typeOf(c) == "union_type" {
			x.collectUnion(u, c, depth, seen)
			continue
		}
		if kw := x.absentMember(c); kw != "" {
			u.nullable = u.nullable || kw == "null"
			u.optional = u.optional || kw != "null"
			continue
		}
		u.members = append(u.members, x.schemaOf(c, depth+1, seen))
	}
}

// absentMember says whether the union member c is null ("null"), undefined
// or void ("undefined"), or neither ("").
func (x *extractor) absentMember(c int32) string {
	switch x.typeOf(c) {
	case "predefined_type":
		switch x.text(c) {
		case "null":
			return "null"
		case "undefined", "void":
			return "undefined"
		}
	case "literal_type":
		if v := x.t.FirstNamedChild(c); v >= 0 {
			if k := x.typeOf(v); k == "null" || k == "undefined" {
				return k
			}
		}
	}
	return ""
}

// enum is the union of literals of one type as an enum (true | false is
// a boolean), or nil.
func (u *union) enum() *schema {
	enum := &schema{Type: u.members[0].Type, nullable: u.nullable, optional: u.optional}
	for _, m := range u.members {
		if len(m.Enum) == 0 || m.Type != enum.Type {
			return nil
		}
		enum.Enum = append(enum.Enum, m.Enum...)
	}
	if enum.Type == "boolean" && len(enum.Enum) == 2 {
		enum.Enum = nil // true | false
	}
	return enum
}

// genericSchema knows Array<T>, ReadonlyArray<T>, Record<K, V>,
// Readonly/Partial/Required<T>; other generics are {}.
func (x *extractor) genericSchema(t int32, depth int, seen []string) *schema {
	name := x.field(t, x.f.name)
	if name < 0 {
		return &schema{}
	}
	argv := x.typeArguments(x.field(t, x.f.typeArguments))
	switch g := x.text(name); g {
	case "Array", "ReadonlyArray":
		if len(argv) == 1 {
			return x.arraySchema(argv[0], depth, seen)
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
		return x.schemaOf(argv[0], depth+1, seen).withRequired(g)
	}
	return &schema{}
}

// typeArguments are the type arguments of the type_arguments node args
// (none: no arguments), comments left out.
func (x *extractor) typeArguments(args int32) []int32 {
	var argv []int32
	if args < 0 {
		return nil
	}
	for a := range x.t.NamedChildren(args) {
		if x.typeOf(a) != "comment" {
			argv = append(argv, a)
		}
	}
	return argv
}

// withRequired applies the utility type g (Readonly, Required or Partial)
// to the properties s requires.
func (s *schema) withRequired(g string) *schema {
	switch g {
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

// namedSchema resolves a type name to the file's interface or type alias of
// that name; unknown names (imported types, Date, ...) are {}.
func (x *extractor) namedSchema(name string, depth int, seen []string) *schema {
	decl, ok := x.types[name]
	if !ok || slices.Contains(seen, name) { // unknown, or recursive
		return &schema{}
	}
	seen = append(seen[:len(seen):len(seen)], name)
	if x.typeOf(decl) != "interface_declaration" {
		return x.schemaOf(x.field(decl, x.f.value), depth+1, seen)
	}
	if body := x.field(decl, x.f.body); body >= 0 {
		return x.objectSchema(body, depth+1, seen)
	}
	return &schema{Type: "object"}
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
