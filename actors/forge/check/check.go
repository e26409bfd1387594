package check

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentos-run/agentos/transpile"
)

// Severity says whether a Finding makes a tool invalid.
type Severity string

// Severities.
const (
	// SeverityError makes the tool invalid: Result.Valid is false.
	SeverityError Severity = "error"
	// SeverityWarning is advice; it never makes a tool invalid.
	SeverityWarning Severity = "warning"
)

// Risk rates how much damage a tool could do if it misbehaved. High and
// critical tools need an approval before they run.
type Risk string

// Risk levels, from least to most dangerous.
const (
	// RiskLow: nothing in the tool reaches beyond its arguments and results.
	RiskLow Risk = "low"
	// RiskMedium: the tool reaches out through the sanctioned bridge
	// (network, file writes, SQL writes) or is hard to review (very large,
	// heavy string building, partly unparsable).
	RiskMedium Risk = "medium"
	// RiskHigh: the tool asks for host resources (fs, net ...), carries
	// credentials, traverses paths, hides data, or runs sweeping SQL.
	RiskHigh Risk = "high"
	// RiskCritical: the tool can run arbitrary code or commands, or destroy
	// data (eval, Function, child_process, rm -rf, DROP TABLE ...).
	RiskCritical Risk = "critical"
)

func (r Risk) rank() int {
	switch r {
	case RiskMedium:
		return 1
	case RiskHigh:
		return 2
	case RiskCritical:
		return 3
	}
	return 0 // RiskLow and anything unknown
}

// AtLeast reports whether r is as dangerous as o or more. An unknown level
// ranks as RiskLow.
func (r Risk) AtLeast(o Risk) bool { return r.rank() >= o.rank() }

// Finding is one rule violation at a position of the source.
type Finding struct {
	// Line is 1-based.
	Line int `json:"line"`
	// Column is 1-based and counts bytes from the start of the line (a tab
	// or a multi-byte UTF-8 character before the position counts as its
	// byte length), the convention of the transpiler's diagnostics.
	Column int `json:"column"`
	// Rule is the stable rule id (see the package documentation).
	Rule string `json:"rule"`
	// Message says what is wrong and what to write instead.
	Message string `json:"message"`
	// Severity is SeverityError or SeverityWarning.
	Severity Severity `json:"severity"`
}

// String renders the finding as "line:column rule: message", the form an
// LLM reads back.
func (f Finding) String() string {
	return fmt.Sprintf("%d:%d %s: %s", f.Line, f.Column, f.Rule, f.Message)
}

// RiskFinding is one reason a tool is risky, at the position that causes it.
type RiskFinding struct {
	Level  Risk   `json:"level"`
	Reason string `json:"reason"`
	Line   int    `json:"line"`   // 1-based
	Column int    `json:"column"` // 1-based, in bytes (as Finding.Column)
	// Module, when set, is the module the risk is in (a module the checked
	// tool requires, e.g. tools/lib/risky.ts), Line and Column its
	// position there; empty: the checked source itself. Check never sets
	// it: the approval gate's judgment of a tool with its modules does
	// (node.Judge, check_tool).
	Module string `json:"module,omitempty"`
}

// Result is the outcome of checking one tool source.
type Result struct {
	// Valid is true if and only if len(Errors) == 0.
	Valid bool `json:"valid"`
	// Errors are sorted by line, then column; never nil.
	Errors []Finding `json:"errors"`
	// Warnings are sorted by line, then column; never nil.
	Warnings []Finding `json:"warnings"`
	// Risk is the highest level in Risks, RiskLow when Risks is empty.
	Risk Risk `json:"risk"`
	// Risks are sorted by line, then column; never nil.
	Risks []RiskFinding `json:"risks"`
	// Modules are the module specifiers the source names, as written
	// ("./lib/x", "/lib/x", "/mcp/s/t", "lodash"), found on the syntax tree
	// in the order they appear: import and export ... from, import x =
	// require(...), and require(...) / import(...) of a string literal
	// (comments anywhere in them are only comments). A require or import()
	// whose module is not a literal, or require used as a value, is not
	// listed: it is an error with a high risk. IMPORTANT: this is how the
	// approval gate finds what a tool requires (node.Judge), never a
	// pattern over the text.
	Modules []string `json:"-"`
}

// Options configures a Checker. The zero value is usable: no bare module may
// be imported, DefaultAllowedNumbers, the shared transpiler.
type Options struct {
	// AllowedImports are the bare module names a tool may import or require
	// ("lodash" also allows "lodash/fp"; "fs" also allows "node:fs").
	// Relative ('./', '../') and absolute ('/lib/...') specifiers are
	// always allowed.
	AllowedImports []string
	// AllowedNumbers are the numeric literals that are not magic numbers.
	// nil means DefaultAllowedNumbers; an empty non-nil slice allows none.
	AllowedNumbers []float64
	// Transpiler compiles the source for the syntax rule. nil means
	// transpile.Default(), which the executor shares: a tool that was
	// checked is not transpiled a second time to run.
	Transpiler *transpile.Transpiler
}

// DefaultAllowedNumbers are the numeric literals a tool may write when
// Options.AllowedNumbers is nil.
var DefaultAllowedNumbers = []float64{-1, 0, 1, 2, 10, 100, 1000}

// maxPooledNodes bounds the node buffer a pooled worker keeps between checks.
const maxPooledNodes = 1 << 16

// Checker checks tool sources. It is safe for concurrent use; each Check
// borrows a tree-sitter parser from a pool.
type Checker struct {
	allowedImports map[string]bool
	allowedList    string // for messages
	allowedNumbers []float64
	tr             *transpile.Transpiler
	pool           sync.Pool // of *worker
}

// New returns a Checker for opts. It copies the slices in opts.
func New(opts Options) *Checker {
	c := &Checker{
		allowedImports: make(map[string]bool, len(opts.AllowedImports)),
		tr:             opts.Transpiler,
	}
	for _, m := range opts.AllowedImports {
		c.allowedImports[m] = true
	}
	if len(opts.AllowedImports) > 0 {
		c.allowedList = strings.Join(opts.AllowedImports, ", ")
	}
	if opts.AllowedNumbers == nil {
		c.allowedNumbers = append([]float64(nil), DefaultAllowedNumbers...)
	} else {
		c.allowedNumbers = append([]float64{}, opts.AllowedNumbers...)
	}
	if c.tr == nil {
		c.tr = transpile.Default()
	}
	c.pool.New = func() any { return newWorker() }
	return c
}

// Check compiles and analyses the TypeScript src found at path (the path
// names the source in compile diagnostics and keys the transpile cache).
//
// When src does not compile, the Result holds only "syntax" errors (the
// other rules need a reliable tree) and the risk found on the best-effort
// tree. Check never panics on any input and never returns nil slices.
func (c *Checker) Check(path string, src []byte) Result { return c.check(path, src, false) }

// CheckDeferred is Check without the transpiler on its path: check_tool's
// answer to a source it has not seen compiled.
//
// The transpiler runs only where the syntax tree says it is needed: when
// tree-sitter finds an error in the tree (the transpiler's diagnostics are
// reported, as by Check, and a source the grammar merely lacks stays valid
// with a parse-incomplete warning) or an await outside an async function
// (top-level await included). A clean tree is judged on the tree alone:
// the compile errors only the transpiler finds (a name declared twice, a
// break outside a loop, a getter with arguments ...) are then reported
// where the source is compiled anyway, at its first exec (the executor
// shares the transpiler, which caches the result, error or not, by
// content hash), and by any later check of the same content, which
// answers from that cache exactly as Check does.
//
// IMPORTANT: a Result that must not change once the source has been run
// (the forge's judgment, which its replay reproduces) MUST come from
// Check, never from CheckDeferred.
func (c *Checker) CheckDeferred(path string, src []byte) Result { return c.check(path, src, true) }

func (c *Checker) check(path string, src []byte, deferred bool) Result {
	w := c.pool.Get().(*worker)
	defer func() {
		if cap(w.tree.nodes) > maxPooledNodes {
			w.tree.nodes, w.tree.lines = nil, nil // don't pin one huge source's buffers
		}
		c.pool.Put(w)
	}()
	syntax, cerr, parsed := c.compileAndParse(w, path, src, deferred)

	a := analyzer{c: c, src: src, lint: cerr == nil}
	if parsed {
		a.t = &w.tree
		a.run()
	}
	if cerr != nil {
		// The tree of a source that does not compile is unreliable: report
		// only why it does not compile (the risk found so far is kept).
		if len(syntax) == 0 && parsed {
			syntax = a.treeSyntaxErrors()
		}
		if len(syntax) == 0 {
			syntax = []Finding{{Line: 1, Column: 1, Rule: ruleSyntax, Severity: SeverityError,
				Message: "the source does not compile (" + cerr.Error() + "): fix it so that it is valid TypeScript"}}
		}
		a.errs, a.warns = syntax, nil
	}
	return a.result()
}

// compileAndParse parses src into w.tree (parsed: a tree was made) and
// compiles it unless deferred and the tree says the transpiler is not
// needed (see CheckDeferred). syntax are the compile diagnostics, cerr the
// compile error (nil: it compiles, or was not compiled).
func (c *Checker) compileAndParse(w *worker, path string, src []byte, deferred bool) (syntax []Finding, cerr error, parsed bool) {
	if bad := invalidUTF8(src); bad >= 0 {
		// Never hand invalid UTF-8 to the transpiler: esbuild v0.28.2 loops
		// forever quoting it into the source map.
		line, col := lineCol(src, bad)
		return []Finding{{Line: line, Column: col, Rule: ruleSyntax, Severity: SeverityError,
			Message: "the source is not valid UTF-8 here: save the file as UTF-8 text"}}, errInvalidUTF8, w.parse(src)
	}
	if c.tr.Cached(path, src) {
		syntax, cerr = c.compile(path, src)
		return syntax, cerr, w.parse(src)
	}
	if deferred {
		if parsed = w.parse(src); parsed && !w.tree.hasError && !w.tree.awaitOutsideAsync() {
			return nil, nil, true
		}
		syntax, cerr = c.compile(path, src)
		return syntax, cerr, parsed
	}
	// The tree is parsed while the transpiler compiles the source (two
	// independent passes over src: on two cores a check of a new source
	// takes the longer of the two, not their sum).
	done := make(chan struct{})
	go func() {
		defer close(done)
		parsed = w.parse(src)
	}()
	syntax, cerr = c.compile(path, src)
	<-done
	return syntax, cerr, parsed
}

// compile transpiles src and turns the transpiler's diagnostics into
// syntax findings.
func (c *Checker) compile(path string, src []byte) ([]Finding, error) {
	_, err := c.tr.Transpile(path, src)
	if err == nil {
		return nil, nil
	}
	var syntax []Finding
	var te *transpile.Error
	if errors.As(err, &te) {
		for _, d := range te.Diagnostics {
			syntax = append(syntax, Finding{
				Line: max(d.Line, 1), Column: max(d.Column, 1),
				Rule: ruleSyntax, Message: syntaxMessage(d.Message), Severity: SeverityError,
			})
		}
	}
	return syntax, err
}

var errInvalidUTF8 = errors.New("invalid UTF-8")

// invalidUTF8 returns the offset of the first byte of src that is not
// valid UTF-8, or -1.
func invalidUTF8(src []byte) int {
	if utf8.Valid(src) {
		return -1
	}
	for k := 0; k < len(src); {
		r, n := utf8.DecodeRune(src[k:])
		if r == utf8.RuneError && n == 1 {
			return k
		}
		k += n
	}
	return -1
}

// lineCol converts a byte offset of src into a 1-based line and byte column.
func lineCol(src []byte, off int) (line, col int) {
	line = 1 + bytes.Count(src[:off], []byte{'\n'})
	return line, off - (bytes.LastIndexByte(src[:off], '\n') + 1) + 1
}

// syntaxMessage adds what to do to a bare compiler message.
func syntaxMessage(msg string) string {
	if strings.Contains(msg, ": ") {
		return msg // already explains itself (e.g. top-level await)
	}
	return strings.TrimRight(msg, ": ") + ": the source does not compile, fix the TypeScript at this position"
}

// result assembles the sorted, de-duplicated Result.
func (a *analyzer) result() Result {
	r := Result{
		Errors:   sortFindings(a.errs),
		Warnings: sortFindings(a.warns),
		Risks:    sortRisks(a.risks),
		Risk:     RiskLow,
		Modules:  a.modules,
	}
	r.Valid = len(r.Errors) == 0
	for _, f := range r.Risks {
		if f.Level.rank() > r.Risk.rank() {
			r.Risk = f.Level
		}
	}
	return r
}

func sortFindings(fs []Finding) []Finding {
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].Line != fs[j].Line {
			return fs[i].Line < fs[j].Line
		}
		if fs[i].Column != fs[j].Column {
			return fs[i].Column < fs[j].Column
		}
		return fs[i].Rule < fs[j].Rule
	})
	out := make([]Finding, 0, len(fs))
	for i, f := range fs {
		if i > 0 {
			p := fs[i-1]
			if p.Line == f.Line && p.Column == f.Column && p.Rule == f.Rule {
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

func sortRisks(rs []RiskFinding) []RiskFinding {
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].Line != rs[j].Line {
			return rs[i].Line < rs[j].Line
		}
		if rs[i].Column != rs[j].Column {
			return rs[i].Column < rs[j].Column
		}
		return rs[i].Level.rank() > rs[j].Level.rank()
	})
	out := make([]RiskFinding, 0, len(rs))
	for _, f := range rs {
		dup := false
		for k := len(out) - 1; k >= 0 && out[k].Line == f.Line && out[k].Column == f.Column; k-- {
			if out[k].Reason == f.Reason {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, f)
		}
	}
	return out
}
