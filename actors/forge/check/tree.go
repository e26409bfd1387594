package check

import (
	"sort"
	"sync"

	"github.com/agentos-run/agentos/internal/tsparse"
)

// The syntax tree comes from the one TypeScript front end (internal/tsparse:
// a flat slice of nodes, pre-order, so source order), annotated once with
// what the rules ask of each node. Every rule then runs in plain Go over
// indices: no cgo call, no allocation and no node-type string per question
// asked of the tree.

// kind is what the rules need to know about a node's grammar symbol. Named
// grammar nodes and anonymous tokens get distinct kinds (the grammar has a
// named `import` node for dynamic import and an anonymous "import" keyword).
type kind uint8

const (
	kOther kind = iota
	kError      // tree-sitter ERROR node
	kComment
	kIdentifier
	kPropertyIdentifier
	kShorthandPropertyIdentifier
	kPredefinedType
	kNumber
	kString
	kStringFragment
	kEscapeSequence
	kTemplateString
	kTemplateSubstitution
	kLiteralType
	kTypeContext // a node whose subtree is a type: nothing in it runs
	kEnumAssignment
	kCallExpr
	kNewExpr
	kMemberExpr
	kSubscriptExpr
	kParenExpr
	kSequenceExpr
	kAsExpr
	kSatisfiesExpr
	kNonNullExpr
	kUnaryExpr
	kBinaryExpr
	kAugmentedAssign
	kAssignment
	kArguments
	kImportStatement
	kImportRequireClause
	kImport // the callee of a dynamic import(...)
	kExportStatement
	kExportSpecifier
	kWithStatement
	kVariableDeclarator
	kPair
	kPublicFieldDefinition
	kRequiredParameter
	kOptionalParameter
	kDeclares         // a node whose identifier children are names it declares
	kArrowFunction    // its parameter field, when an identifier, is declared
	kShorthandPattern // {a} in a destructuring pattern: declares a

	// Anonymous tokens.
	tDefault
	tEq
	tPlus
	tMinus
	tPlusEq
	tInstanceof
	tAwait
	tAsync

	numKinds // the number of kinds, not a kind
)

var namedKinds = map[string]kind{
	"ERROR":                                 kError,
	"comment":                               kComment,
	"identifier":                            kIdentifier,
	"property_identifier":                   kPropertyIdentifier,
	"shorthand_property_identifier":         kShorthandPropertyIdentifier,
	"predefined_type":                       kPredefinedType,
	"number":                                kNumber,
	"string":                                kString,
	"string_fragment":                       kStringFragment,
	"escape_sequence":                       kEscapeSequence,
	"template_string":                       kTemplateString,
	"template_substitution":                 kTemplateSubstitution,
	"literal_type":                          kLiteralType,
	"enum_assignment":                       kEnumAssignment,
	"call_expression":                       kCallExpr,
	"new_expression":                        kNewExpr,
	"member_expression":                     kMemberExpr,
	"subscript_expression":                  kSubscriptExpr,
	"parenthesized_expression":              kParenExpr,
	"sequence_expression":                   kSequenceExpr,
	"as_expression":                         kAsExpr,
	"satisfies_expression":                  kSatisfiesExpr,
	"non_null_expression":                   kNonNullExpr,
	"unary_expression":                      kUnaryExpr,
	"binary_expression":                     kBinaryExpr,
	"augmented_assignment_expression":       kAugmentedAssign,
	"assignment_expression":                 kAssignment,
	"arguments":                             kArguments,
	"import_statement":                      kImportStatement,
	"import_require_clause":                 kImportRequireClause,
	"import":                                kImport,
	"export_statement":                      kExportStatement,
	"export_specifier":                      kExportSpecifier,
	"with_statement":                        kWithStatement,
	"variable_declarator":                   kVariableDeclarator,
	"pair":                                  kPair,
	"public_field_definition":               kPublicFieldDefinition,
	"required_parameter":                    kRequiredParameter,
	"optional_parameter":                    kOptionalParameter,
	"arrow_function":                        kArrowFunction,
	"shorthand_property_identifier_pattern": kShorthandPattern,
	"function_declaration":                  kDeclares,
	"generator_function_declaration":        kDeclares,
	"function_expression":                   kDeclares,
	"import_specifier":                      kDeclares,
	"namespace_import":                      kDeclares,
	"import_clause":                         kDeclares,
	"catch_clause":                          kDeclares,
	"array_pattern":                         kDeclares,
	"assignment_pattern":                    kDeclares,
	"rest_pattern":                          kDeclares,
	"pair_pattern":                          kDeclares,

	"type_annotation":           kTypeContext,
	"type_query":                kTypeContext,
	"type_alias_declaration":    kTypeContext,
	"type_arguments":            kTypeContext,
	"type_parameters":           kTypeContext,
	"interface_declaration":     kTypeContext,
	"asserts_annotation":        kTypeContext,
	"type_predicate_annotation": kTypeContext,
	"opting_type_annotation":    kTypeContext,
	"omitting_type_annotation":  kTypeContext,
	"adding_type_annotation":    kTypeContext,
	"implements_clause":         kTypeContext,
	"extends_type_clause":       kTypeContext,
}

var tokenKinds = map[string]kind{
	"default":    tDefault,
	"=":          tEq,
	"+":          tPlus,
	"-":          tMinus,
	"+=":         tPlusEq,
	"instanceof": tInstanceof,
	"await":      tAwait,
	"async":      tAsync,
}

// functionNodes are the grammar's nodes that start a function body: an
// await in one is legal only when the node has an async token.
var functionNodes = map[string]bool{
	"function_declaration": true, "generator_function_declaration": true,
	"function_expression": true, "generator_function": true, "function": true,
	"arrow_function": true, "method_definition": true, "class_static_block": true,
}

// positioned reports whether the rules read the position or the text of
// nodes of kind k.
func positioned(k kind) bool {
	switch k {
	case kOther, kTypeContext, kLiteralType, kEnumAssignment, kStringFragment, kDeclares, kArrowFunction:
		return false
	}
	return k < tDefault
}

// usesFields are the kinds whose children the rules find by field.
var usesFields = [numKinds]bool{
	kCallExpr: true, kNewExpr: true, kMemberExpr: true, kSubscriptExpr: true,
	kBinaryExpr: true, kAugmentedAssign: true, kAssignment: true, kPair: true,
	kVariableDeclarator: true, kPublicFieldDefinition: true, kRequiredParameter: true,
	kOptionalParameter: true, kImportStatement: true, kExportStatement: true,
	kImportRequireClause: true, kExportSpecifier: true, kArrowFunction: true,
}

// field is the grammar field a node fills in its parent.
type field uint8

const (
	fNone field = iota
	fObject
	fProperty
	fFunction
	fArguments
	fConstructor
	fIndex
	fName
	fValue
	fKey
	fLeft
	fRight
	fSource
	fAlias
	fOperator
	fArgument
	fPattern
	fParameter
	fOther
)

// fieldNames are the grammar's fields the rules name.
var fieldNames = map[string]field{
	"": fNone, "object": fObject, "property": fProperty, "function": fFunction,
	"arguments": fArguments, "constructor": fConstructor, "index": fIndex,
	"name": fName, "value": fValue, "key": fKey, "left": fLeft, "right": fRight,
	"source": fSource, "alias": fAlias, "operator": fOperator,
	"argument": fArgument, "pattern": fPattern, "parameter": fParameter,
}

// fieldOf is the rules' field for the grammar's field name (fOther for one
// no rule names).
func fieldOf(name string) field {
	if f, ok := fieldNames[name]; ok {
		return f
	}
	return fOther
}

// symbolInfo is the per-symbol table built once from the grammar.
type symbolInfo struct {
	kind  kind
	named bool
	fn    bool // a function (functionNodes)
}

// symbols is built on first use, not at package initialisation (which
// every start of the binary pays).
var symbols = sync.OnceValue(buildSymbols)

func buildSymbols() []symbolInfo {
	out := make([]symbolInfo, tsparse.SymbolCount())
	for s := range out {
		sym := uint16(s)
		name := tsparse.SymbolName(sym)
		if tsparse.IsNamed(sym) {
			out[s] = symbolInfo{kind: namedKinds[name], named: true, fn: functionNodes[name]}
		} else {
			out[s] = symbolInfo{kind: tokenKinds[name]}
		}
	}
	return out
}

// errorInfo is what the rules know of tree-sitter's ERROR nodes.
var errorInfo = symbolInfo{kind: kError, named: true}

// node is one syntax node of the front end's tree, annotated for the rules.
// Links are indices into tree.nodes (the same as the front end's); -1 means
// none.
type node struct {
	start, end uint32 // byte offsets into the source; 0 for plain tokens
	parent     int32
	first      int32  // first child
	next       int32  // next sibling
	sym        uint16 // grammar symbol
	kind       kind
	field      field // the field this node fills in its parent
	named      bool
	missing    bool // inserted by error recovery (MISSING node)
	inType     bool // an ancestor is a type (erased: nothing in it runs)
	inEnum     bool // an ancestor is an enum member initializer
	secret     bool // a name-based secret finding already covers this literal
}

// tree is a flattened syntax tree plus a line table for positions.
type tree struct {
	nodes    []node
	lines    []int // byte offset at which each line starts
	hasError bool  // the tree holds ERROR or MISSING nodes
}

// worker holds the reusable buffers of one check. A worker is used by one
// goroutine at a time.
type worker struct {
	tree tree
}

func newWorker() *worker { return &worker{} }

// pos converts a byte offset into a 1-based line and a 1-based byte column.
func (t *tree) pos(off uint32) (line, col int) {
	o := int(off)
	i := sort.Search(len(t.lines), func(i int) bool { return t.lines[i] > o }) - 1
	if i < 0 {
		i = 0
	}
	return i + 1, o - t.lines[i] + 1
}

// awaitOutsideAsync reports whether an await keyword (an await expression
// or a for await) stands outside an async function: at the top level,
// which a tool's CommonJS output cannot have, or in a function that is not
// async. The grammar accepts both; the transpiler rejects them.
func (t *tree) awaitOutsideAsync() bool {
	syms := symbols()
	for i := range t.nodes {
		if t.nodes[i].kind != tAwait || t.nodes[i].named {
			continue
		}
		fn := t.nodes[i].parent
		for fn >= 0 && (int(t.nodes[fn].sym) >= len(syms) || !syms[t.nodes[fn].sym].fn) {
			fn = t.nodes[fn].parent
		}
		if fn < 0 || !t.hasToken(fn, tAsync) {
			return true
		}
	}
	return false
}

// hasToken reports whether node i has an anonymous child token of kind k.
func (t *tree) hasToken(i int32, k kind) bool {
	for c := t.nodes[i].first; c >= 0; c = t.nodes[c].next {
		if !t.nodes[c].named && t.nodes[c].kind == k {
			return true
		}
	}
	return false
}
