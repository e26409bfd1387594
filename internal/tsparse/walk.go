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

// tsparse_rec is one node, in pre-order.
typedef struct {
	uint32_t start, end, depth;
	uint16_t sym, field;
	uint8_t missing;
} tsparse_rec;

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

// tsparse_walk writes the tree's nodes to out (at most cap of them) and
// returns how many there are.
static uint32_t tsparse_walk(TSTree *t, tsparse_rec *out, uint32_t cap) {
	TSTreeCursor cur = ts_tree_cursor_new(ts_tree_root_node(t));
	uint32_t n = 0, depth = 0;
	for (;;) {
		if (n < cap) {
			TSNode node = ts_tree_cursor_current_node(&cur);
			tsparse_rec *r = &out[n];
			r->start = ts_node_start_byte(node);
			r->end = ts_node_end_byte(node);
			r->depth = depth;
			r->sym = ts_node_symbol(node);
			r->field = ts_tree_cursor_current_field_id(&cur);
			r->missing = ts_node_is_missing(node);
		}
		n++;
		if (ts_tree_cursor_goto_first_child(&cur)) {
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
	"sync/atomic"
	"unsafe"
)

// MaxNodes bounds the nodes of a Tree: Parse gives up on a larger tree.
const MaxNodes = 1 << 26

// parser is a tree-sitter parser for TypeScript with its reusable buffers,
// freed with its owner. A parser is used by one goroutine at a time
// (tree-sitter parsers are not safe for concurrent use).
type parser struct {
	p     *C.TSParser
	recs  []C.tsparse_rec
	stack []int32 // stack[d] is the last node seen at depth d
	last  []int32 // last[d] is the last child seen of stack[d-1], or -1
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

// parsers pools parsers: making one costs more than parsing a small tool.
var parsers = sync.Pool{New: func() any { return newParser() }}

// parses counts the calls of Parse (Parses).
var parses atomic.Uint64

// Parses is the number of sources this process has parsed: what Shared
// saves shows in it.
func Parses() uint64 { return parses.Load() }

// maxPooledRecords bounds the record buffer a pooled parser keeps.
const maxPooledRecords = 1 << 16

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
		if cap(ps.recs) > maxPooledRecords {
			ps.recs = nil // don't pin one huge source's buffer
		}
		parsers.Put(ps)
	}()
	return ps.parse(src)
}

func (ps *parser) parse(src []byte) *Tree {
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
	recs := ps.walk(ts, len(src))
	if recs == nil {
		return nil
	}
	t := &Tree{Src: src, HasError: bool(C.tsparse_has_error(ts))}
	ps.link(t, recs)
	return t
}

// walk copies the tree's records into ps.recs, growing it once if the
// guess (a node per two bytes) was short; nil: more than MaxNodes.
func (ps *parser) walk(ts *C.TSTree, srcLen int) []C.tsparse_rec {
	if cap(ps.recs) < srcLen/2+64 {
		ps.recs = make([]C.tsparse_rec, srcLen/2+64)
	}
	ps.recs = ps.recs[:cap(ps.recs)]
	for {
		n := int(C.tsparse_walk(ts, &ps.recs[0], C.uint32_t(len(ps.recs))))
		if n <= len(ps.recs) {
			return ps.recs[:n]
		}
		if n > MaxNodes {
			return nil
		}
		ps.recs = make([]C.tsparse_rec, n)
	}
}

// link turns the records of a pre-order walk into t.Nodes, linked by
// parent, first child and next sibling.
func (ps *parser) link(t *Tree, recs []C.tsparse_rec) {
	t.Nodes = make([]Node, len(recs))
	named := symbols().named
	stack, last := ps.stack[:0], ps.last[:0]
	for i := range recs {
		r := &recs[i]
		d, idx := int(r.depth), int32(i)
		parent := int32(-1)
		if d > 0 {
			parent = stack[d-1]
		}
		stack = append(stack[:d], idx)
		for len(last) <= d {
			last = append(last, -1)
		}
		prev := last[d]
		last = append(last[:d], idx, -1) // idx has no child yet
		sym := uint16(r.sym)
		t.Nodes[i] = Node{
			Start: uint32(r.start), End: uint32(r.end),
			Parent: parent, First: -1, Next: -1,
			Sym: sym, Field: uint16(r.field),
			Named: isNamed(named, sym), Missing: r.missing != 0,
		}
		if prev >= 0 {
			t.Nodes[prev].Next = idx
		} else if parent >= 0 {
			t.Nodes[parent].First = idx
		}
	}
	ps.stack, ps.last = stack, last
}
