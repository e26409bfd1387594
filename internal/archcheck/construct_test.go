package archcheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// constructor is the one package that constructs the node's actors and
// resources: it opens them as ordered steps, each with its close
// (internal/host, runtime.go). IMPORTANT: exactly one package; every other
// one, the CLI, the examples and the kernel tools included, is handed what
// it needs or sends the actors their messages.
const constructor = "internal/host"

// actorConstructors are the functions that make an actor's object or the
// Props an actor is spawned from (an actor is spawned only from its Props,
// so they also catch a spawn). An actor's own package may call its own.
var actorConstructors = map[string]map[string]bool{
	"actors/executor":   {"New": true, "Props": true},
	"actors/forge":      {"New": true, "Props": true},
	"actors/git":        {"Props": true},
	"actors/kernel":     {"New": true, "Props": true},
	"actors/registry":   {"Open": true, "Props": true},
	"actors/supervisor": {"Props": true}, // the node's supervision tree
}

// scanConstructions returns where one package's non-test files call an
// actor's constructor, keyed "pkg constructs actors/X.F".
func scanConstructions(p listed) ([]violation, error) {
	pkg := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
	if pkg == constructor {
		return nil, nil
	}
	var out []violation
	files := slices.Concat(p.GoFiles, p.CgoFiles, p.IgnoredGoFiles)
	sort.Strings(files)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || !strings.HasSuffix(f, ".go") {
			continue
		}
		v, err := scanFileConstructions(pkg, filepath.Join(p.Dir, f))
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	return out, nil
}

func scanFileConstructions(pkg, file string) ([]violation, error) {
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	actors := map[string]string{} // local name -> actor package
	for _, im := range af.Imports {
		ip, err := strconv.Unquote(im.Path.Value)
		rel := strings.TrimPrefix(ip, module+"/")
		if err != nil || actorConstructors[rel] == nil || inside(pkg, rel) {
			continue
		}
		local := path.Base(rel)
		if im.Name != nil {
			local = im.Name.Name
		}
		actors[local] = rel
	}
	var out []violation
	ast.Inspect(af, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok || !actorConstructors[actors[id.Name]][sel.Sel.Name] {
			return true
		}
		pos := fset.Position(sel.Pos())
		out = append(out, violation{
			key:   cmpOr(pkg, "(root)") + " constructs " + actors[id.Name] + "." + sel.Sel.Name,
			where: fmt.Sprintf("%s:%d: only %s constructs the node's actors: add a step there and hand this package what it needs", filepath.Join(pkg, filepath.Base(pos.Filename)), pos.Line, constructor),
		})
		return true
	})
	return out, nil
}

// TestOnlyTheCompositionRootConstructsActors: no package but the
// composition root (constructor) calls an actor's constructor or Props,
// outside the actor's own package; tests may.
func TestOnlyTheCompositionRootConstructsActors(t *testing.T) {
	for _, p := range goList(t) {
		vs, err := scanConstructions(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			t.Errorf("%s (%s)", v.key, v.where)
		}
	}
}

// TestConstructionRuleFails proves the rule can fail, on files written
// here: a package calling an actor's New and a supervisor's Props fails;
// the composition root, the actor's own package, a client and a test file
// pass.
func TestConstructionRuleFails(t *testing.T) {
	dir := t.TempDir()
	src := func(pkg, body string) listed {
		d := filepath.Join(dir, strings.ReplaceAll(pkg, "/", "_"))
		if err := mkdirAll(d); err != nil {
			t.Fatal(err)
		}
		if err := writeFile(filepath.Join(d, "a.go"), body); err != nil {
			t.Fatal(err)
		}
		if err := writeFile(filepath.Join(d, "a_test.go"), "package p\n\nimport \""+module+"/actors/kernel\"\n\nvar k, _ = kernel.New(kernel.Options{})\n"); err != nil {
			t.Fatal(err)
		}
		return listed{ImportPath: strings.TrimSuffix(module+"/"+pkg, "/"), Dir: d, GoFiles: []string{"a.go"}, IgnoredGoFiles: []string{"a_test.go"}}
	}
	const body = `package p

import (
	k "github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/actors/supervisor"
)

var x, _ = k.New(k.Options{})
var c = k.NewClient(nil, nil)
var _, _ = supervisor.Props(supervisor.Spec{})
`
	var got []string
	for _, p := range []listed{src("tools", body), src(constructor, body), src("actors/kernel", "package kernel\n\nfunc f() { _, _ = New(Options{}) }\n")} {
		vs, err := scanConstructions(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			got = append(got, v.key)
		}
	}
	want := []string{"tools constructs actors/kernel.New", "tools constructs actors/supervisor.Props"}
	if !slices.Equal(got, want) {
		t.Fatalf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
