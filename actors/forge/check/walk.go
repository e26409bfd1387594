package check

// The tree is copied out of tree-sitter by one cgo call: a C loop walks the
// whole tree with a cursor and writes a flat record per node. Walking from
// Go cost a cgo call per node and per step (and go-tree-sitter's
// TreeCursor.CurrentNode allocates a *Node and keeps it in a per-tree
// map), which was a third of checking a new source.
//
// The C code calls the tree-sitter runtime and the TypeScript grammar that
// github.com/smacker/go-tree-sitter (pinned in go.mod) compiles and links
// in; the declarations below are copied from its api.h. IMPORTANT: when
// that dependency is upgraded, check them against its api.h (the struct
// layouts of TSNode and TSTreeCursor in particular); TestFlatWalkMatchesCursorWalk
// compares this walk with go-tree-sitter's own on every test source.

/*
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>

typedef struct TSParser TSParser;
typedef struct TSTree TSTree;
typedef struct TSLanguage TSLanguage;
typedef uint16_t TSSymbol;
typedef uint16_t TSFieldId;
typedef struct TSNode { uint32_t context[4]; const void *id; const TSTree *tree; } TSNode;
typedef struct TSTreeCursor { const void *tree; const void *id; uint32_t context[3]; } TSTreeCursor;

TSParser *ts_parser_new(void);
void ts_parser_delete(TSParser *self);
bool ts_parser_set_language(TSParser *self, const TSLanguage *language);
TSTree *ts_parser_parse_string(TSParser *self, const TSTree *old_tree, const char *string, uint32_t length);
void ts_tree_delete(TSTree *self);
TSNode ts_tree_root_node(const TSTree *self);
bool ts_node_has_error(TSNode self);
bool ts_node_is_missing(TSNode self);
TSSymbol ts_node_symbol(TSNode self);
uint32_t ts_node_start_byte(TSNode self);
uint32_t ts_node_end_byte(TSNode self);
TSTreeCursor ts_tree_cursor_new(TSNode node);
void ts_tree_cursor_delete(TSTreeCursor *self);
TSNode ts_tree_cursor_current_node(const TSTreeCursor *self);
TSFieldId ts_tree_cursor_current_field_id(const TSTreeCursor *self);
bool ts_tree_cursor_goto_first_child(TSTreeCursor *self);
bool ts_tree_cursor_goto_next_sibling(TSTreeCursor *self);
bool ts_tree_cursor_goto_parent(TSTreeCursor *self);
uint32_t ts_language_field_count(const TSLanguage *self);
const TSLanguage *tree_sitter_typescript(void);

// check_rec is one node, in pre-order.
typedef struct {
	uint32_t start, end, depth;
	uint16_t sym, field;
	uint8_t missing;
} check_rec;

static TSParser *check_parser_new(void) {
	TSParser *p = ts_parser_new();
	if (p && !ts_parser_set_language(p, tree_sitter_typescript())) {
		ts_parser_delete(p);
		return NULL;
	}
	return p;
}

static uint32_t check_field_count(void) { return ts_language_field_count(tree_sitter_typescript()); }

static TSTree *check_parse(TSParser *p, const char *src, uint32_t len) {
	return ts_parser_parse_string(p, NULL, src, len);
}

static bool check_has_error(TSTree *t) { return ts_node_has_error(ts_tree_root_node(t)); }

// check_walk writes the tree's nodes to out (at most cap of them) and
// returns how many there are. A node is descended into unless it is a leaf:
// leaf[sym] for a symbol below nsym, leaf_error for ERROR (0xFFFF),
// leaf_other for any other symbol.
static uint32_t check_walk(TSTree *t, const uint8_t *leaf, uint32_t nsym, uint8_t leaf_error, uint8_t leaf_other, check_rec *out, uint32_t cap) {
	TSTreeCursor cur = ts_tree_cursor_new(ts_tree_root_node(t));
	uint32_t n = 0, depth = 0;
	for (;;) {
		TSNode node = ts_tree_cursor_current_node(&cur);
		TSSymbol sym = ts_node_symbol(node);
		if (n < cap) {
			check_rec *r = &out[n];
			r->start = ts_node_start_byte(node);
			r->end = ts_node_end_byte(node);
			r->depth = depth;
			r->sym = sym;
			r->field = ts_tree_cursor_current_field_id(&cur);
			r->missing = ts_node_is_missing(node);
		}
		n++;
		uint8_t is_leaf = sym < nsym ? leaf[sym] : (sym == 0xFFFF ? leaf_error : leaf_other);
		if (!is_leaf && ts_tree_cursor_goto_first_child(&cur)) {
			depth++;
			continue;
		}
		while (!ts_tree_cursor_goto_next_sibling(&cur)) {
			if (!ts_tree_cursor_goto_parent(&cur)) {
				ts_tree_cursor_delete(&cur);
				return n;
			}
			depth--;
		}
	}
}
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// parser is a tree-sitter parser for TypeScript, freed with its owner.
type parser struct {
	p    *C.TSParser
	recs []C.check_rec
}

func newParser() *parser {
	p := C.check_parser_new()
	if p == nil {
		panic("check: tree-sitter refused the TypeScript grammar (a version mismatch between the grammar and the runtime)")
	}
	ps := &parser{p: p}
	runtime.AddCleanup(ps, func(p *C.TSParser) { C.ts_parser_delete(p) }, p)
	return ps
}

var (
	// leafTab[sym] is leaf(symbols[sym]), for the C walk.
	leafTab    = sync.OnceValue(buildLeafTab) // lazy, as symbols: no work at process start
	leafError  = leaf(symbolInfo{kind: kError, named: true})
	leafOther  = leaf(symbolInfo{})
	fieldTab   = sync.OnceValue(buildFieldTab)
	noSource   = []byte{0}
	cBool      = map[bool]C.uint8_t{false: 0, true: 1}
	errorInfo  = symbolInfo{kind: kError, named: true}
	maxRecords = 1 << 26
)

func buildLeafTab() []C.uint8_t {
	syms := symbols()
	t := make([]C.uint8_t, len(syms))
	for i, info := range syms {
		t[i] = cBool[leaf(info)]
	}
	return t
}

// buildFieldTab maps the grammar's field ids to the fields the rules use.
func buildFieldTab() []field {
	n := int(C.check_field_count())
	t := make([]field, n+1)
	for id := 1; id <= n; id++ {
		t[id] = fieldOf(language.FieldName(id))
	}
	return t
}

// parse fills w.tree from src. It returns false when tree-sitter gave no
// tree at all (it only fails that way when cancelled, which we never do).
func (w *worker) parse(src []byte) bool {
	t := &w.tree
	t.nodes = t.nodes[:0]
	t.lines = append(t.lines[:0], 0)
	for i, b := range src {
		if b == '\n' {
			t.lines = append(t.lines, i+1)
		}
	}
	ps := w.parser
	s := src
	if len(s) == 0 {
		s = noSource // a valid pointer; the length stays 0
	}
	ts := C.check_parse(ps.p, (*C.char)(unsafe.Pointer(&s[0])), C.uint32_t(len(src)))
	runtime.KeepAlive(s)
	if ts == nil {
		return false
	}
	defer C.ts_tree_delete(ts)
	t.hasError = bool(C.check_has_error(ts))
	if cap(ps.recs) < len(src)/2+64 {
		ps.recs = make([]C.check_rec, len(src)/2+64)
	}
	ps.recs = ps.recs[:cap(ps.recs)]
	var n int
	for {
		lt := leafTab()
		n = int(C.check_walk(ts, &lt[0], C.uint32_t(len(lt)), cBool[leafError], cBool[leafOther], &ps.recs[0], C.uint32_t(len(ps.recs))))
		if n <= len(ps.recs) {
			break
		}
		if n > maxRecords {
			return false
		}
		ps.recs = make([]C.check_rec, n)
	}
	w.build(ps.recs[:n])
	if verifyTree != nil {
		verifyTree(src, &w.tree)
	}
	return true
}

// verifyTree, set by the package's tests, checks every tree parse builds.
var verifyTree func(src []byte, t *tree)

// build links the records of a pre-order walk into w.tree.nodes, as the
// rules expect them (see node).
func (w *worker) build(recs []C.check_rec) {
	t := &w.tree
	if cap(t.nodes) < len(recs) {
		t.nodes = make([]node, 0, len(recs))
	}
	syms, ft := symbols(), fieldTab()
	stack := w.stack[:0] // stack[d] is the last node seen at depth d
	last := w.last[:0]   // last[d] is the last child seen of stack[d-1], or -1
	for i := range recs {
		r := &recs[i]
		d := int(r.depth)
		idx := int32(len(t.nodes))
		parent := int32(-1)
		if d > 0 {
			parent = stack[d-1]
		}
		stack = append(stack[:d], idx)
		if len(last) <= d {
			last = append(last, -1)
		}
		last = last[:d+1]
		prev := last[d]
		last[d] = idx
		last = append(last, -1) // idx has no child yet

		var info symbolInfo
		sym := uint16(r.sym)
		if int(sym) < len(syms) {
			info = syms[sym]
		} else if sym == errorSymbol {
			info = errorInfo
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
			nd.missing = r.missing != 0
		}
		if parent >= 0 {
			p := &t.nodes[parent]
			nd.inType = p.inType || p.kind == kTypeContext || p.kind == kLiteralType
			nd.inEnum = p.inEnum || p.kind == kEnumAssignment
		}
		// Only nodes the rules look at get a position, and only where a
		// rule asks for it, a field (as the rules expect: 0 and fNone
		// elsewhere).
		if positioned(info.kind) || nd.missing {
			nd.start, nd.end = uint32(r.start), uint32(r.end)
			if parent >= 0 && usesFields[t.nodes[parent].kind] && int(r.field) < len(ft) {
				nd.field = ft[r.field]
			}
		}
		t.nodes = append(t.nodes, nd)
		if prev >= 0 {
			t.nodes[prev].next = idx
		} else if parent >= 0 {
			t.nodes[parent].first = idx
		}
	}
	w.stack, w.last = stack, last
}
