package archcheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// maxComplexity is the highest cyclomatic complexity a function of the
// module's non-test, non-generated code may have (issue 27: "no function
// over 30").
const maxComplexity = 30

// meanGoal is the mean issue 27 asks for ("under 4.5"); the anchors
// (bbolt, protoactor-go, ergo, Temporal's SDK, k6) sit at 2.1-3.6.
// meanCeiling is the mean the test fails above. The module reached 4.43,
// so the ceiling is now under the goal itself. IMPORTANT: lower it as the
// mean falls, never raise it.
const (
	meanGoal    = 4.5
	meanCeiling = 4.49
)

// tooComplex are the functions known to exceed maxComplexity, with their
// complexity when they were listed. IMPORTANT: this list may only shrink:
// a function not listed fails the test when it crosses the limit, a listed
// one fails when it grows, and an entry whose function is back under the
// limit (or gone) fails until it is removed. Split a function into named
// steps (or a table-driven dispatch) rather than adding it here.
var tooComplex = map[string]int{
	// The root package and the CLI's wiring: issue 27's
	// restructure (one composition root, config owned where it is used).
}

// complexity is gocyclo's cyclomatic complexity of a function: 1, plus one
// for each if, for, range, non-default case of a switch or select, && and
// ||. Function literals count toward the function that holds them.
func complexity(fn ast.Node) int {
	c := 1
	ast.Inspect(fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

// function is one function of the module with its complexity.
type function struct {
	name  string // pkg.Func or pkg.(Recv).Method, pkg relative to the module
	where string // file:line
	cx    int
}

// funcName names a declaration as tooComplex does.
func funcName(pkg string, fd *ast.FuncDecl) string {
	name := fd.Name.Name
	if fd.Recv != nil && len(fd.Recv.List) > 0 {
		t := fd.Recv.List[0].Type
		if s, ok := t.(*ast.StarExpr); ok {
			t = s.X
		}
		switch x := t.(type) {
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		}
		if id, ok := t.(*ast.Ident); ok {
			name = "(" + id.Name + ")." + name
		}
	}
	return pkg + "." + name
}

// packageFunctions returns the functions of a package's non-test files,
// for every platform, skipping generated files (protoc's, the code
// generator's).
func packageFunctions(p listed) ([]function, error) {
	pkg := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
	var out []function
	for _, f := range slices.Concat(p.GoFiles, p.CgoFiles, p.IgnoredGoFiles) {
		if strings.HasSuffix(f, "_test.go") || !strings.HasSuffix(f, ".go") {
			continue
		}
		fset := token.NewFileSet()
		af, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if ast.IsGenerated(af) {
			continue
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				pos := fset.Position(fd.Pos())
				out = append(out, function{funcName(pkg, fd), fmt.Sprintf("%s:%d", filepath.Join(pkg, f), pos.Line), complexity(fd)})
			}
		}
	}
	return out, nil
}

// checkComplexity returns what breaks the rule: functions over the limit
// and not listed, listed functions that grew, and stale entries.
func checkComplexity(fns []function, listed map[string]int) []string {
	var bad []string
	over := map[string]bool{}
	for _, f := range fns {
		if f.cx <= maxComplexity {
			continue
		}
		over[f.name] = true
		was, ok := listed[f.name]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s (%s) has cyclomatic complexity %d, over %d: split it into named steps or a table-driven dispatch", f.name, f.where, f.cx, maxComplexity))
		case f.cx > was:
			bad = append(bad, fmt.Sprintf("%s (%s) has cyclomatic complexity %d, up from %d when it was listed in tooComplex: it may only come down", f.name, f.where, f.cx, was))
		}
	}
	var stale []string
	for name := range listed {
		if !over[name] {
			stale = append(stale, fmt.Sprintf("%s is no longer over %d (or is gone): remove it from tooComplex", name, maxComplexity))
		}
	}
	sort.Strings(stale)
	return append(bad, stale...)
}

// TestCyclomaticComplexity: no function of the module's non-test code
// exceeds maxComplexity (but the shrinking list tooComplex), and the mean
// stays under meanCeiling. It reports the mean against meanGoal.
func TestCyclomaticComplexity(t *testing.T) {
	var fns []function
	for _, p := range goList(t) {
		f, err := packageFunctions(p)
		if err != nil {
			t.Fatal(err)
		}
		fns = append(fns, f...)
	}
	for _, b := range checkComplexity(fns, tooComplex) {
		t.Error(b)
	}
	total := 0
	for _, f := range fns {
		total += f.cx
	}
	mean := float64(total) / float64(len(fns))
	t.Logf("%d functions, mean cyclomatic complexity %.2f (goal under %.1f), %d over %d", len(fns), mean, meanGoal, len(tooComplex), maxComplexity)
	if mean > meanCeiling {
		t.Errorf("mean cyclomatic complexity %.2f is over its ceiling %.2f: split the new branching code into named steps", mean, meanCeiling)
	}
}

// TestComplexityCheckFails proves the rule can fail: gocyclo's count on a
// function written here, a new function over the limit, a listed one that
// grew, and a stale entry.
func TestComplexityCheckFails(t *testing.T) {
	src := `package p

func f(a, b bool, xs []int, ch chan int) int {
	if a && b || !a {
		return 1
	}
	for i := 0; i < 2; i++ {
	}
	for range xs {
	}
	switch {
	case a:
	case b:
	default:
	}
	select {
	case <-ch:
	default:
	}
	g := func() {
		if b {
		}
	}
	g()
	return 0
}
`
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, "f.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	// 1 + if + && + || + for + range + 2 cases + 1 comm + the literal's if.
	if got := complexity(af.Decls[0]); got != 10 {
		t.Fatalf("complexity = %d, want 10", got)
	}
	fns := []function{
		{"new.f", "new/f.go:1", maxComplexity + 1},
		{"old.grew", "old/g.go:1", 40},
		{"old.same", "old/s.go:1", 35},
	}
	got := checkComplexity(fns, map[string]int{"old.grew": 39, "old.same": 35, "old.gone": 33})
	want := []string{"new.f (new/f.go:1) has cyclomatic complexity 31", "old.grew (old/g.go:1) has cyclomatic complexity 40, up from 39", "old.gone is no longer over"}
	if len(got) != len(want) {
		t.Fatalf("got %d findings, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("finding %d = %q, want it to start with %q", i, got[i], want[i])
		}
	}
}
