package tsparse

// The tree is copied out of tree-sitter by one cgo call: a C loop walks the
// whole tree with a cursor and writes a flat record per node. Walking from
// Go costs a cgo call per node and per step (and go-tree-sitter's
// TreeCursor.CurrentNode allocates a *Node and keeps it in a per-tree map).
//
// The C code calls the tree-sitter runtime and the TypeScript grammar that
// github.com/smacker/go-tree-sitter (pinned in go.mod) compiles and links
// in; the declarations below are copied from its api.h. IMPORTANT: when
// that dependency is upgraded, check them against its api.h (the struct
// layouts of TSNode and TSTreeCursor in particular); TestWalkMatchesNodeAPI
// compares this walk with go-tree-sitter's node API on every test source.

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
bool ts_node_is_named(TSNode self);
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
const TSLanguage *tree_sitter_typescript(void);

// tsparse_node is one node, linked to its parent, first child and next
// sibling by index (-1: none). IMPORTANT: its layout is Node's (Go);
// nodeLayout below fails the build when they differ.
typedef struct {
	uint32_t start, end;
	int32_t parent, first, next;
	uint16_t sym, field;
	uint8_t named, missing;
} tsparse_node;

static TSParser *tsparse_parser_new(void) {
	TSParser *p = ts_parser_new();
	if (p && !ts_parser_set_language(p, tree_sitter_typescript())) {
		ts_parser_delete(p);
		return NULL;
	}
	return p;
}

static TSTree *tsparse_parse(TSParser *p, const char *src, uint32_t len) {
	return ts_parser_parse_string(p, NULL, src, len);
}

static bool tsparse_has_error(TSTree *t) { return ts_node_has_error(ts_tree_root_node(t)); }

// tsparse_walk writes the tree's nodes to out in pre-order, linked, and
// returns how many there are. When there are more than cap, it writes the
// first cap (not all linked) and only counts the rest.
static uint32_t tsparse_walk(TSTree *t, tsparse_node *out, uint32_t cap) {
	TSTreeCursor cur = ts_tree_cursor_new(ts_tree_root_node(t));
	uint32_t n = 0;
	int32_t parent = -1, prev = -1;
	for (;;) {
		int32_t idx = (int32_t)n;
		if (n < cap) {
			TSNode node = ts_tree_cursor_current_node(&cur);
			tsparse_node *r = &out[n];
			r->start = ts_node_start_byte(node);
			r->end = ts_node_end_byte(node);
			r->parent = parent;
			r->first = -1;
			r->next = -1;
			r->sym = ts_node_symbol(node);
			r->field = ts_tree_cursor_current_field_id(&cur);
			r->named = ts_node_is_named(node);
			r->missing = ts_node_is_missing(node);
			if (prev >= 0) {
				out[prev].next = idx;
			} else if (parent >= 0) {
				out[parent].first = idx;
			}
		}
		n++;
		if (ts_tree_cursor_goto_first_child(&cur)) {
			parent = idx;
			prev = -1;
			continue;
		}
		prev = idx;
		while (!ts_tree_cursor_goto_next_sibling(&cur)) {
			if (!ts_tree_cursor_goto_parent(&cur)) {
				ts_tree_cursor_delete(&cur);
				return n;
			}
			prev = parent;
			parent = n <= cap ? out[parent].parent : -1; // past cap: only counting
		}
	}
}
*/
import "C"

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// MaxNodes bounds the nodes of a Tree: Parse gives up on a larger tree.
const MaxNodes = 1 << 26

// nodeLayout fails the build when Node and C's tsparse_node differ in size
// or in a field's offset (the walk writes Nodes directly).
var nodeLayout = [1]struct{}{}[unsafe.Sizeof(Node{})-unsafe.Sizeof(C.tsparse_node{})+
	unsafe.Offsetof(Node{}.End)-unsafe.Offsetof(C.tsparse_node{}.end)+
	unsafe.Offsetof(Node{}.Parent)-unsafe.Offsetof(C.tsparse_node{}.parent)+
	unsafe.Offsetof(Node{}.First)-unsafe.Offsetof(C.tsparse_node{}.first)+
	unsafe.Offsetof(Node{}.Next)-unsafe.Offsetof(C.tsparse_node{}.next)+
	unsafe.Offsetof(Node{}.Sym)-unsafe.Offsetof(C.tsparse_node{}.sym)+
	unsafe.Offsetof(Node{}.Field)-unsafe.Offsetof(C.tsparse_node{}.field)+
	unsafe.Offsetof(Node{}.Named)-unsafe.Offsetof(C.tsparse_node{}.named)+
	unsafe.Offsetof(Node{}.Missing)-unsafe.Offsetof(C.tsparse_node{}.missing)]

// parser is a tree-sitter parser for TypeScript with the buffer its walks
// write to, freed with its owner. A parser is used by one goroutine at a
// time (tree-sitter parsers are not safe for concurrent use).
type parser struct {
	p       *C.TSParser
	scratch []Node
}

func newParser() *parser {
	p := C.tsparse_parser_new()
	if p == nil {
		panic("tsparse: tree-sitter refused the TypeScript grammar (a version mismatch between the grammar and the runtime)")
	}
	ps := &parser{p: p}
	runtime.AddCleanup(ps, func(p *C.TSParser) { C.ts_parser_delete(p) }, p)
	return ps
}

// maxScratch bounds the buffer a pooled parser keeps.
const maxScratch = 1 << 16

// parsers pools parsers: making one costs more than parsing a small tool.
var parsers = sync.Pool{New: func() any { return newParser() }}

// parses counts the calls of Parse (Parses).
var parses atomic.Uint64

// Parses is the number of sources this process has parsed: what Shared
// saves shows in it.
func Parses() uint64 { return parses.Load() }

// noSource is a valid pointer for an empty source (its length stays 0).
var noSource = []byte{0}

// Parse parses src and returns its flat syntax tree, which holds src (not
// a copy: the caller MUST NOT modify src while it uses the tree). It
// returns nil when tree-sitter gives no tree (it only fails that way when
// cancelled, which this package never does) or more than MaxNodes nodes.
func Parse(src []byte) *Tree {
	parses.Add(1)
	ps := parsers.Get().(*parser)
	defer func() {
		if cap(ps.scratch) > maxScratch {
			ps.scratch = nil // don't pin one huge source's buffer
		}
		parsers.Put(ps)
	}()
	s := src
	if len(s) == 0 {
		s = noSource
	}
	ts := C.tsparse_parse(ps.p, (*C.char)(unsafe.Pointer(&s[0])), C.uint32_t(len(src)))
	runtime.KeepAlive(s)
	if ts == nil {
		return nil
	}
	defer C.ts_tree_delete(ts)
	nodes := ps.walk(ts, len(src))
	if nodes == nil {
		return nil
	}
	return &Tree{Src: src, Nodes: nodes, HasError: bool(C.tsparse_has_error(ts))}
}

// walk copies the tree's nodes into the parser's buffer (grown, when
// short, to the size the first walk counted) and returns a copy of just
// the tree's size; nil: more than MaxNodes.
func (ps *parser) walk(ts *C.TSTree, srcLen int) []Node {
	if cap(ps.scratch) < srcLen/2+64 {
		ps.scratch = make([]Node, srcLen/2+64)
	}
	ps.scratch = ps.scratch[:cap(ps.scratch)]
	for {
		n := int(C.tsparse_walk(ts, (*C.tsparse_node)(unsafe.Pointer(&ps.scratch[0])), C.uint32_t(len(ps.scratch))))
		if n <= len(ps.scratch) {
			return slices.Clone(ps.scratch[:n])
		}
		if n > MaxNodes {
			return nil
		}
		ps.scratch = make([]Node, n)
	}
}
