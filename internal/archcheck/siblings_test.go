package archcheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// actorPackages are the packages of the node's actors. IMPORTANT: an actor
// reaches a sibling only through the sibling's messages, that is its typed
// client; it MUST NOT hold the sibling's object (the executor, the
// registry, the process table) or start one.
var actorPackages = []string{"executor", "forge", "git", "kernel", "registry"}

// siblingObjects are the identifiers of an actor package that give its
// object or start it: what a sibling must not use. Its Client, its domain
// types (Result, Tool, Written ...), its errors and its pure functions
// (registry.ParamsOf) are fine.
var siblingObjects = map[string]bool{
	"Executor": true, "New": true, "Registry": true, "Open": true, "Props": true,
	"Kernel": true, "Forge": true, "Record": true, "Replay": true, "ReplayWith": true,
	"Recover": true, "RecoverWith": true, "RecoverRun": true, "RecoverRunWith": true,
}

// TestActorsUseTheirSiblingsClients: no non-test file of an actor package
// uses a sibling actor package's object (siblingObjects). The node (package
// node) owns the objects and boots the actors from them; everyone else goes
// through the clients.
func TestActorsUseTheirSiblingsClients(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range actorPackages {
		files, err := filepath.Glob(filepath.Join(root, "actors", a, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			for _, u := range siblingUses(t, name, a) {
				t.Errorf("actors/%s/%s uses %s: an actor reaches a sibling only through its client (messages); ask the node to wire a client, or add a message", a, filepath.Base(name), u)
			}
		}
	}
}

// siblingUses returns the sibling objects file uses, as "pkg.Name (line)".
func siblingUses(t *testing.T, file, self string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	siblings := map[string]string{} // local name -> actor package
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		for _, a := range actorPackages {
			if a != self && p == module+"/actors/"+a {
				local := a
				if imp.Name != nil {
					local = imp.Name.Name
				}
				siblings[local] = a
			}
		}
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && siblings[id.Name] != "" && siblingObjects[sel.Sel.Name] {
			out = append(out, siblings[id.Name]+"."+sel.Sel.Name+" (line "+strconv.Itoa(fset.Position(sel.Pos()).Line)+")")
		}
		return true
	})
	return out
}

// TestSiblingCheckFindsAUse proves the check can fail: a file holding the
// executor object is reported.
func TestSiblingCheckFindsAUse(t *testing.T) {
	dir := t.TempDir()
	src := `package forge

import "github.com/agentos-run/agentos/actors/executor"

type bad struct{ ex *executor.Executor }

func ok(c *executor.Client) {}
`
	name := filepath.Join(dir, "bad.go")
	if err := writeFile(name, src); err != nil {
		t.Fatal(err)
	}
	got := siblingUses(t, name, "forge")
	if len(got) != 1 || !strings.HasPrefix(got[0], "executor.Executor") {
		t.Fatalf("uses = %v, want exactly executor.Executor", got)
	}
}

func writeFile(name, src string) error { return os.WriteFile(name, []byte(src), 0o644) }
