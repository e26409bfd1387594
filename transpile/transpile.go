// Package transpile turns a tool's TypeScript into JavaScript that goja runs,
// with esbuild's Go API, and caches the output by content hash. Runnable,
// which the executor calls, first tries a fast path without esbuild for a
// plain tool (strip.go: types blanked in place in the tree-sitter tree the
// checker shares) and falls back to esbuild for anything it declines.
//
// The output is a CommonJS module body wrapped as a function expression
//
//	(function (exports, require, module, __filename, __dirname, __agentos_helpers) { ... })
//
// where the last parameter MUST be the object HelpersJS evaluates to (see
// helpers.go: esbuild's per-module interop prelude is replaced by helpers
// prepared once per runtime)
//
// targeting ES2022 with the features goja lacks (async generators, for await)
// lowered by esbuild. Top-level await cannot be lowered and is reported as a
// compile error. An inline source map is appended so that stack traces name
// TypeScript lines and columns.
//
// IMPORTANT: transpiling costs about 0.6 ms warm and several ms the first time
// in a process; the cache makes a source that did not change free to run
// again. A Transpiler is safe for concurrent use.
package transpile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/agentos-run/agentos/internal/lru"
)

// DefaultCacheEntries is how many transpiled sources a Transpiler made by New
// with max < 1 (and the shared Default one) keeps.
const DefaultCacheEntries = 4096

// Wrapper prefix and suffix around every module body. The prefix is a
// banner, so esbuild shifts the source map by it.
const (
	wrapPrefix = "(function (exports, require, module, __filename, __dirname, " + HelpersParam + ") {"
	wrapSuffix = "\n})"
)

// Diagnostic is one compile error at a 1-based line and column of the
// TypeScript source.
type Diagnostic struct {
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
}

// Error is returned when a source does not compile. It carries every
// diagnostic esbuild reported.
type Error struct {
	Path        string
	Diagnostics []Diagnostic
}

func (e *Error) Error() string {
	var b strings.Builder
	for i, d := range e.Diagnostics {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s:%d:%d: %s", e.Path, d.Line, d.Column, d.Message)
	}
	return b.String()
}

// Output is a transpiled module.
type Output struct {
	// JS is the wrapped CommonJS function expression, with an inline source map.
	JS string
	// Hash is the hex SHA-256 of the TypeScript source (see Hash).
	Hash string
	// Stripped is true when JS came from the fast path (see Runnable), not
	// from esbuild.
	Stripped bool
}

type key struct {
	path string
	hash string
}

type result struct {
	out Output
	err error
}

// Transpiler transpiles TypeScript and caches the result by (path, content
// hash). The path takes part in the key because the source map names it.
type Transpiler struct {
	cache *lru.Cache[key, result]
}

// New returns a Transpiler that caches at most max sources
// (max < 1 means DefaultCacheEntries).
func New(max int) *Transpiler {
	if max < 1 {
		max = DefaultCacheEntries
	}
	return &Transpiler{cache: lru.New[key, result](max)}
}

// shared is made on first use: its cache's table is not allocated by every
// start of the binary.
var shared = sync.OnceValue(func() *Transpiler { return New(DefaultCacheEntries) })

// Default returns the process-wide Transpiler that the executor and
// check_tool share, so a tool checked once is never transpiled again to run.
func Default() *Transpiler { return shared() }

// Hash returns the hex SHA-256 of src: the content hash a tool is known by in
// caches, the registry and the journal.
func Hash(src []byte) string {
	sum := sha256.Sum256(src)
	return hex.EncodeToString(sum[:])
}

// Transpile returns the JavaScript for the TypeScript src found at path.
// A source that does not compile returns an *Error with line:column
// diagnostics; the error is cached like a success.
//
// IMPORTANT: Transpile always answers with esbuild's verdict (what check_tool
// and write_file report): an entry the fast path made for Runnable is
// compiled again by esbuild and replaced.
func (t *Transpiler) Transpile(path string, src []byte) (Output, error) {
	k := key{path: path, hash: Hash(src)}
	if r, ok := t.cache.Get(k); ok && !r.out.Stripped {
		return r.out, r.err
	}
	r := transform(path, k.hash, src)
	t.cache.Add(k, r)
	return r.out, r.err
}

// Runnable returns JavaScript the executor can run for the TypeScript src
// at path: the cached output if there is one (from either path), else the
// fast path's (see strip.go: the source parsed once by tree-sitter,
// TypeScript-only syntax blanked in place, no esbuild), else esbuild's.
//
// IMPORTANT: what only esbuild reports on a source that tree-sitter parses
// cleanly is not checked here: goja's compiler reports what it also refuses
// (a name declared twice, break outside a loop ...) when the module is
// compiled to run (the executor then asks Transpile, so that the run fails
// with esbuild's diagnostics and check_tool finds them cached), and
// Transpile (check_tool, write_file's gate) still reports esbuild's verdict
// for the same source. See docs/PERFORMANCE.md.
func (t *Transpiler) Runnable(path string, src []byte) (Output, error) {
	k := key{path: path, hash: Hash(src)}
	if r, ok := t.cache.Get(k); ok {
		return r.out, r.err
	}
	if utf8.Valid(src) {
		if js, ok := strip(path, src); ok {
			out := Output{JS: js, Hash: k.hash, Stripped: true}
			t.cache.Add(k, result{out: out})
			return out, nil
		}
	}
	r := transform(path, k.hash, src)
	t.cache.Add(k, r)
	return r.out, r.err
}

// Cached reports whether esbuild's verdict on path with content src is in
// the cache (an entry of the fast path's is not).
func (t *Transpiler) Cached(path string, src []byte) bool {
	r, ok := t.cache.Get(key{path: path, hash: Hash(src)})
	return ok && !r.out.Stripped
}

func transform(path, hash string, src []byte) result {
	// IMPORTANT: esbuild (v0.28.2) loops forever on some invalid UTF-8 (a
	// truncated multi-byte sequence decodes with width 0). A tool source
	// MUST be UTF-8; refuse anything else before esbuild sees it.
	if !utf8.Valid(src) {
		line, col := invalidUTF8At(src)
		return result{err: &Error{Path: path, Diagnostics: []Diagnostic{{Line: line, Column: col,
			Message: "the source is not valid UTF-8: save the file as UTF-8"}}}}
	}
	res := api.Transform(string(src), api.TransformOptions{
		Loader: api.LoaderTS,
		Format: api.FormatCommonJS,
		Target: api.ES2022,
		// IMPORTANT: a source map's sources are relative to the generated
		// file, which is named by path (goja resolves them against its
		// directory): the full path here printed tools/math/tools/math/x.ts
		// in stack traces.
		Sourcefile: path[strings.LastIndexByte(path, '/')+1:],
		Sourcemap:  api.SourceMapInline,
		Banner:     wrapPrefix,
		Footer:     wrapSuffix,
		Charset:    api.CharsetUTF8,
		LogLevel:   api.LogLevelSilent,
		// goja has no async generators: esbuild lowers them (and for await)
		// into generator-based helpers that goja runs.
		Supported: map[string]bool{
			"async-generator": false,
			"for-await":       false,
		},
	})
	if len(res.Errors) > 0 {
		e := &Error{Path: path}
		for _, m := range res.Errors {
			d := Diagnostic{Message: m.Text}
			if m.Location != nil {
				d.Line = m.Location.Line
				d.Column = m.Location.Column + 1
			}
			if strings.Contains(m.Text, "Top-level await") {
				d.Message = "top-level await is not supported in tools: move the await into the default export (an async function)"
			}
			e.Diagnostics = append(e.Diagnostics, d)
		}
		return result{err: e}
	}
	js, _ := rewriteHelpers(string(res.Code))
	return result{out: Output{JS: js, Hash: hash}}
}

// invalidUTF8At returns the 1-based line and byte column of the first byte
// of src that is not valid UTF-8.
func invalidUTF8At(src []byte) (line, col int) {
	line, col = 1, 1
	for len(src) > 0 {
		r, n := utf8.DecodeRune(src)
		if r == utf8.RuneError && n <= 1 {
			return line, col
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col += n
		}
		src = src[n:]
	}
	return line, col
}
