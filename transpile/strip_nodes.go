package transpile

import (
	"bytes"
	"strings"
	"sync"

	"github.com/agentos-run/agentos/internal/tsparse"
)

// jsKinds are the JavaScript node kinds the fast path passes through as
// they are (walking their children). IMPORTANT: a kind is listed only when
// esbuild, targeting ES2022 for goja, prints it unchanged; anything else
// (enum_declaration, internal_module, decorator, import_alias, meta_property,
// import, with_statement, hash_bang_line, type_assertion, jsx ...) declines.
var jsKinds = []string{
	"program", "comment", "variable_declaration",
	"statement_block", "if_statement", "else_clause", "for_statement", "while_statement", "do_statement",
	"try_statement", "catch_clause", "finally_clause", "throw_statement", "break_statement",
	"continue_statement", "switch_statement", "switch_body", "switch_case", "switch_default",
	"labeled_statement", "statement_identifier", "empty_statement", "debugger_statement",
	"parenthesized_expression", "super", "true", "false", "null", "undefined",
	"string", "string_fragment", "escape_sequence", "template_string", "template_substitution",
	"regex", "regex_pattern", "array", "object", "pair", "spread_element",
	"computed_property_name", "property_identifier", "shorthand_property_identifier",
	"private_property_identifier", "object_pattern", "array_pattern", "pair_pattern",
	"shorthand_property_identifier_pattern", "assignment_pattern", "object_assignment_pattern",
	"rest_pattern", "binary_expression", "unary_expression", "update_expression",
	"assignment_expression", "augmented_assignment_expression", "ternary_expression",
	"call_expression", "new_expression", "member_expression", "subscript_expression", "arguments",
	"optional_chain", "sequence_expression", "yield_expression", "formal_parameters",
	"class_heritage", "extends_clause", "instantiation_expression", "type_identifier",
}

// typeKinds are TypeScript-only nodes erased whole.
var typeKinds = []string{
	"type_annotation", "type_arguments", "type_parameters", "implements_clause",
	"interface_declaration", "type_alias_declaration", "function_signature", "ambient_declaration",
	"abstract_method_signature", "method_signature", "index_signature", "accessibility_modifier",
	"override_modifier", "asserts_annotation", "type_predicate_annotation",
	"adding_type_annotation", "omitting_type_annotation", "opting_type_annotation",
}

// actionTable is the allow-list: the action for each node kind the fast
// path understands, built on first use by actions.
var actionTable struct {
	once sync.Once
	m    map[string]action
}

// actions returns the allow-list.
func actions() map[string]action {
	actionTable.once.Do(func() { actionTable.m = buildActions() })
	return actionTable.m
}

func buildActions() map[string]action {
	m := map[string]action{}
	for _, k := range jsKinds {
		m[k] = (*stripper).children
	}
	for _, k := range typeKinds {
		m[k] = func(s *stripper, i int32) bool { s.blankNode(i); return true }
	}
	for k, a := range map[string]action{
		"function_declaration": (*stripper).function, "function_expression": (*stripper).function,
		"generator_function_declaration": (*stripper).function, "generator_function": (*stripper).function,
		"method_definition": (*stripper).function, "arrow_function": (*stripper).arrow,
		"class_declaration": (*stripper).class, "class": (*stripper).class,
		"abstract_class_declaration": (*stripper).class, "class_body": (*stripper).class,
		"class_static_block": (*stripper).children, "public_field_definition": (*stripper).field,
		"required_parameter": (*stripper).parameter, "optional_parameter": (*stripper).parameter,
		"as_expression": (*stripper).keepOperand, "satisfies_expression": (*stripper).keepOperand,
		"non_null_expression": (*stripper).keepOperand, "this": (*stripper).this,
		"return_statement": (*stripper).returns, "await_expression": (*stripper).await,
		"for_in_statement": (*stripper).forIn, "import_statement": (*stripper).importStatement,
		"export_statement": (*stripper).exportStatement, "variable_declarator": (*stripper).declarator,
		"expression_statement": (*stripper).expressionStatement, "regex_flags": (*stripper).regexFlags,
		"number": (*stripper).number, "identifier": (*stripper).identifier, "lexical_declaration": (*stripper).lexical,
	} {
		m[k] = a
	}
	return m
}

// field ids, looked up once.
var fieldIDs = sync.OnceValue(func() fields {
	return fields{declaration: tsparse.Field("declaration"), value: tsparse.Field("value"),
		source: tsparse.Field("source"), name: tsparse.Field("name"), alias: tsparse.Field("alias"),
		returnType: tsparse.Field("return_type"), pattern: tsparse.Field("pattern"), body: tsparse.Field("body")}
})

// function walks a function: `this` is its own and return is allowed. An
// async generator declines (esbuild lowers it for goja).
func (s *stripper) function(i int32) bool {
	if s.t.HasToken(i, "async") && s.t.HasToken(i, "*") {
		return false
	}
	s.fnDepth++
	s.anyFn++
	ok := s.children(i)
	s.fnDepth--
	s.anyFn--
	return ok
}

// arrow walks an arrow function. A return type spanning lines declines:
// erased, it would leave a line break before `=>`.
func (s *stripper) arrow(i int32) bool {
	if rt := s.t.ChildByField(i, fieldIDs().returnType); rt >= 0 && bytes.IndexByte(s.t.Src[s.t.Nodes[rt].Start:s.t.Nodes[rt].End], '\n') >= 0 {
		return false
	}
	s.anyFn++
	ok := s.children(i)
	s.anyFn--
	return ok
}

// class walks a class; inside its body `this` is bound.
func (s *stripper) class(i int32) bool {
	s.fnDepth++
	ok := s.children(i)
	s.fnDepth--
	return ok
}

// field erases a `declare` or `abstract` field whole (it defines nothing
// at run time) and the TypeScript modifiers of any other.
func (s *stripper) field(i int32) bool {
	if s.t.HasToken(i, "declare") || s.t.HasToken(i, "abstract") {
		s.blankNode(i)
		return true
	}
	return s.children(i)
}

// parameter declines parameter properties (`constructor(private x)`,
// which esbuild turns into assignments) and `this` parameters (which must
// go with their comma).
func (s *stripper) parameter(i int32) bool {
	for c := range s.t.Children(i) {
		switch s.t.Type(c) {
		case "accessibility_modifier", "override_modifier", "readonly", "decorator":
			return false
		}
	}
	if p := s.t.ChildByField(i, fieldIDs().pattern); p >= 0 && s.t.Type(p) == "this" {
		return false
	}
	return s.children(i)
}

// keepOperand erases what follows a node's operand: the `as T` or
// `satisfies T` of an expression, the `!` of `x!`.
func (s *stripper) keepOperand(i int32) bool {
	e := s.t.FirstNamedChild(i)
	if e < 0 {
		return false
	}
	s.blank(s.t.Nodes[e].End, s.t.Nodes[i].End)
	return s.afterErasure(s.t.Nodes[i].End) && s.walk(e)
}

// expressionStatement declines a statement that starts with an object
// literal: tree-sitter reads `{"a": 1}` as one, JavaScript as a block
// (esbuild reports it).
func (s *stripper) expressionStatement(i int32) bool {
	e := s.t.FirstNamedChild(i)
	return e >= 0 && s.t.Type(e) != "object" && s.children(i)
}

// lexical declines a `using` declaration (newer than ES2022: esbuild
// lowers it).
func (s *stripper) lexical(i int32) bool {
	return (s.t.HasToken(i, "let") || s.t.HasToken(i, "const")) && s.children(i)
}

// regexFlags declines flags that are not ES2022's, or repeated: tree-sitter
// takes any letters, esbuild refuses them (and goja would only at run time).
func (s *stripper) regexFlags(i int32) bool {
	seen := map[rune]bool{}
	for _, c := range s.t.Text(i) {
		if !strings.ContainsRune("dgimsuy", c) || seen[c] {
			return false
		}
		seen[c] = true
	}
	return true
}

// number declines a legacy octal-like literal (`010`, `08`: esbuild
// prints its value, goja refuses it) and numeric separators.
func (s *stripper) number(i int32) bool {
	n := s.t.Text(i)
	return !strings.Contains(n, "_") && !(len(n) > 1 && n[0] == '0' && n[1] >= '0' && n[1] <= '9')
}

// strictReserved are the words an ES module (strict code) may not use as
// names, which goja's sloppy-mode compile of the body would accept.
var strictReserved = map[string]bool{"let": true, "static": true, "yield": true, "implements": true,
	"interface": true, "package": true, "private": true, "protected": true, "public": true, "await": true}

// identifier declines a strict-mode reserved word used as a name (esbuild
// refuses it in a module).
func (s *stripper) identifier(i int32) bool { return !strictReserved[s.t.Text(i)] }

// declarator walks `name!: T = value`; the definite `!` is a token erased
// by token.
func (s *stripper) declarator(i int32) bool { return s.children(i) }

// this declines a top-level `this` (esbuild rewrites it in a module).
func (s *stripper) this(i int32) bool { return s.fnDepth > 0 }

// returns declines a top-level return (a module may not return).
func (s *stripper) returns(i int32) bool { return s.anyFn > 0 && s.children(i) }

// await declines await outside an async function: top-level await is
// esbuild's compile error, with its message.
func (s *stripper) await(i int32) bool {
	for p := s.t.Nodes[i].Parent; p >= 0; p = s.t.Nodes[p].Parent {
		switch s.t.Type(p) {
		case "function_declaration", "function_expression", "arrow_function", "method_definition",
			"generator_function_declaration", "generator_function":
			return s.t.HasToken(p, "async") && s.children(i)
		case "class_body":
			return false
		}
	}
	return false
}

// forIn declines `for await` (esbuild lowers it for goja).
func (s *stripper) forIn(i int32) bool {
	return !s.t.HasToken(i, "await") && s.children(i)
}
