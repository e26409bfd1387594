package archcheck

import (
	"bufio"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the README's \"Reading the source\" table")

// The README's table of messages sits between these markers.
const (
	tableBegin = "<!-- messages:begin (go test ./internal/archcheck -run ReadingTheSource -update) -->"
	tableEnd   = "<!-- messages:end -->"
)

// TestReadingTheSourceTable keeps the README's "Reading the source" table
// equal to the code: for every message an actor handles, the .proto that
// defines it, the handler its Receive switch calls, and the reply its
// comment names. Run it with -update to rewrite the table.
func TestReadingTheSourceTable(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	want, err := messageTable(root)
	if err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(root, "README.md")
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, tableBegin), strings.Index(s, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %q ... %q markers around the messages table", tableBegin, tableEnd)
	}
	got := s[i+len(tableBegin) : j]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(readme, []byte(s[:i+len(tableBegin)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's messages table is not the code's; run go test ./internal/archcheck -run ReadingTheSource -update. Want:\n%s", want)
}

func TestMessageTableCoversEveryActor(t *testing.T) {
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	table, err := messageTable(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"executor", "forge", "git", "kernel", "registry"} {
		if !strings.Contains(table, "| "+a+" |") {
			t.Errorf("the messages table has no row for the %s actor", a)
		}
	}
}

// protoMessage is one top-level message of a .proto file.
type protoMessage struct {
	name, reply string
}

var replyRe = regexp.MustCompile(`Reply:\s*(\w+)`)

// protoMessages reads the top-level messages of a .proto file with the reply
// their leading comment names ("none" when it says there is no reply).
func protoMessages(path string) (map[string]protoMessage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]protoMessage{}
	var comment []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "//"):
			comment = append(comment, strings.TrimSpace(strings.TrimPrefix(line, "//")))
		case strings.HasPrefix(line, "message "):
			name := strings.Fields(line)[1]
			text := strings.Join(comment, " ")
			m := protoMessage{name: name, reply: "none"}
			if r := replyRe.FindStringSubmatch(text); r != nil {
				m.reply = r[1]
			}
			out[name] = m
			comment = nil
		default:
			comment = nil
		}
	}
	return out, sc.Err()
}

// messageTable builds the table's rows: one per message an actor's Receive
// switch handles, sorted by actor then message.
func messageTable(root string) (string, error) {
	protos, err := filepath.Glob(filepath.Join(root, "actors", "*", "*pb", "*.proto"))
	if err != nil {
		return "", err
	}
	var rows []string
	for _, proto := range protos {
		pbDir := filepath.Dir(proto)
		actorDir := filepath.Dir(pbDir)
		actor := filepath.Base(actorDir)
		pbPkg := filepath.Base(pbDir)
		msgs, err := protoMessages(proto)
		if err != nil {
			return "", err
		}
		handlers, err := receiveHandlers(actorDir, pbPkg)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(root, proto)
		for _, h := range handlers {
			m, ok := msgs[h.msg]
			if !ok {
				continue // a oneof wrapper or a nested type, not a message of its own
			}
			reply := "—"
			if m.reply != "none" {
				reply = "`" + m.reply + "`"
			}
			rows = append(rows, fmt.Sprintf("| %s | `%s` | [`%s`](%s) | `%s` `%s` | %s |",
				actor, h.msg, filepath.ToSlash(rel[len("actors/"):]), filepath.ToSlash(rel), h.file, h.handler, reply))
		}
	}
	slices.Sort(rows)
	var b strings.Builder
	b.WriteString("\n| actor | message | defined in | handled by | reply |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	return b.String(), nil
}

// handled is one case of an actor's Receive switch.
type handled struct{ msg, file, handler string }

// receiveHandlers parses the Go files of an actor package and returns, for
// each message of pbPkg its Receive switch names, the onX method the case
// calls ("Receive" when the case handles it inline).
func receiveHandlers(dir, pbPkg string) ([]handled, error) {
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []handled
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return nil, err
		}
		local := pbPkg // the name the file gives the pb package
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); strings.HasSuffix(path, "/"+pbPkg) && imp.Name != nil {
				local = imp.Name.Name
			}
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "Receive" || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				cc, ok := n.(*ast.CaseClause)
				if !ok {
					return true
				}
				handler := "Receive"
				ast.Inspect(&ast.BlockStmt{List: cc.Body}, func(n ast.Node) bool {
					if call, ok := n.(*ast.CallExpr); ok && handler == "Receive" {
						if sel, ok := call.Fun.(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "on") {
							handler = sel.Sel.Name
						}
					}
					return handler == "Receive"
				})
				for _, e := range cc.List {
					star, ok := e.(*ast.StarExpr)
					if !ok {
						continue
					}
					sel, ok := star.X.(*ast.SelectorExpr)
					if !ok {
						continue
					}
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == local {
						out = append(out, handled{msg: sel.Sel.Name, file: filepath.Base(name), handler: handler})
					}
				}
				return false
			})
		}
	}
	return out, nil
}
