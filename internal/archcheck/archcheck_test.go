package archcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// module is the module path: package paths in the tables are relative to it
// ("" is the root package).
const module = "github.com/agentos-run/agentos"

// The resources, named as in the tables: an import path (which also covers
// the packages under it, e.g. net/http/httptest), or osFiles.
const (
	osFiles = "os files" // os.Open, os.WriteFile, os.Stat ..., filepath.WalkDir ...
	osExec  = "os/exec"  // also os.StartProcess
)

// forbidden are the resources a package outside the owners MUST NOT use,
// and why they are the owners'. net/url, net/netip, net/mail and
// net/textproto only parse text: they are not listed.
var forbidden = []struct{ name, why string }{
	{osExec, "runs programs"},
	{osFiles, "reads or writes the host's files"},
	{"net", "opens sockets"},
	{"net/http", "serves or calls HTTP"},
	{"net/rpc", "serves or calls RPC"},
	{"net/smtp", "sends mail"},
	{"syscall", "makes raw system calls"},
	{"golang.org/x/sys/unix", "makes raw system calls"},
	{"io/ioutil", "reads or writes the host's files"},
	{"go.etcd.io/bbolt", "opens database files"},
	{"modernc.org/sqlite", "opens database files"},
	{"github.com/jackc/pgx", "opens database connections"},
}

// owners own the host's I/O: they, and every package under them, may use
// every resource.
var owners = []struct{ pkg, why string }{
	{"actors/executor", "runs tools: worker processes (os/exec), their confinement (syscall, x/sys/unix), the scratch files"},
	{"actors/git", "keeps the tool root in Git: its files, the flocks, HTTPS to a remote upstream"},
	{"vfs", "the tool root's files as the tools see them"},
	{"driver", "the drivers: files, SQL databases, HTTP fetch, the model's API"},
	{"cmd/agentos", "the command line: the user's files, the node's socket, the worker re-exec"},
}

// exceptions are the other packages allowed one resource, each with the
// reason. An entry with todo is a known violation kept so that the check
// passes: todo says where the use should move (issue 12's findings).
// IMPORTANT: an entry no longer needed makes the test fail: remove it.
var exceptions = []struct{ pkg, resource, why, todo string }{
	// The journal and the capability ledger own their bbolt files.
	{"journal", "go.etcd.io/bbolt", "the journal owns its bbolt file (the run records)", ""},
	{"journal", osFiles, "the journal owns its bbolt file: compaction writes a copy and renames it, and the host files say which process holds it", ""},
	{"journal", "github.com/jackc/pgx", "the journal owns its PostgreSQL tables when nodes share it (OpenPostgres)", ""},
	{"journal", "syscall", "a journal held by another process is stale when that pid is gone (kill(pid, 0))", ""},
	{"capability", "go.etcd.io/bbolt", "the capability ledger owns its bbolt file (issued and revoked tokens)", ""},
	{"capability", osFiles, "the operator's revocation list owns its bbolt file's directory (.agentos/revocations.db, made 0700 before it is opened)", ""},
	{"cluster", osFiles, "the cluster's certificates: 'agentos cluster certs' writes the CA and node keys (0600, never over a file), and a member reads its certificate, key and CA", ""},
	{"cluster", "net/http", "the seeds provider's health endpoint is HTTP over mutual TLS: its client's transport carries the member certificate", ""},
	{"pii", "go.etcd.io/bbolt", "the PII token map owns its bbolt file (token -> value, kept out of the journal)", ""},
	{"governance/approval", "go.etcd.io/bbolt", "the approval gate owns its bbolt file (approval requests and decisions, kept out of the journal, which may be PostgreSQL)", ""},
	{"memory", "go.etcd.io/bbolt", "the agents' long-term memory owns its bbolt file (.agentos/memory.db: facts, lessons, preferences, pages)", ""},

	// The node's admin socket server and its client.
	{"admin", "net", "the admin socket server and its client (a unix socket, 0600 in a 0700 directory)", ""},
	{"admin", "net/http", "the admin socket speaks HTTP/JSON", ""},
	{"admin", "syscall", "the owner of the admin socket's directory (Stat_t.Uid)", ""},
	{"admin", osFiles, "the admin socket's private directory and a stale socket's removal", ""},

	// The composition root (internal/host): the HTTP handler types of Serve and the metrics
	// endpoint; the tool root's configuration and state directory.
	{"internal/host", "net/http", "the http.Handler of the admin socket's extra routes (node.go, node_journal.go) and of the metrics endpoint (metrics.go)", ""},
	{"internal/host", "syscall", "the owner of the secret files (Stat_t.Uid)", ""},
	{"internal/host", osFiles, "the tool root's state: the pii key and names files (config_pii.go), its .agentos state directories (runtime.go) and the admin socket (node.go)",
		"the secret files (secrets.go: walks and chmods .agentos/secrets, reads secret files) and the quota files (quota.go) should go through an owner (vfs, or a package of the node)"},

	// The configuration reads its own file.
	{"config", osFiles, "config.Load reads the tool root's agentos.json, once", ""},

	// The code generator writes the .pb.go files beside their .proto.
	{"internal/protogen", osFiles, "go generate: reads .proto files and writes the generated Go beside them", ""},

	// The side-by-side benchmark runner (a developer's tool, never in the product).
	{"internal/sidebyside", osExec, "runs the peers' benchmarks (node) and agentos' test binaries (go test -c)", ""},
	{"internal/sidebyside", osFiles, "checks that the peers are built, its temporary directory of test binaries, /proc/loadavg", ""},

	// The process start benchmark (a developer's tool, never in the product).
	{"internal/startcost", osExec, "builds agentos and a hello-world floor (go build) and starts them as whole processes", ""},
	{"internal/startcost", osFiles, "its temporary directory of binaries and the floor's source, /proc/loadavg", ""},
	{"internal/startcost", "syscall", "each child's CPU time (Rusage)", ""},

	// agentos init lays a tool root out before any jail over it can exist.
	{"internal/scaffold", osFiles, "agentos init: makes the tool root's directories and writes agentos.json (never over an existing file)", ""},

	// agentos as an MCP server: the handler of MCP over streamable HTTP.
	{"mcpserver", "net/http", "MCP over streamable HTTP: the http.Handler that authenticates bearer capability tokens in front of the MCP SDK's handler; it never listens (cmd/agentos does)", ""},
	{"mcpserver", osFiles, "MCP tasks outlive the node: one private file each (0600, in a 0700 directory, written whole and renamed) under Options.TasksDir (.agentos/mcp-tasks)", ""},

	// The web console: an http.Handler (cmd/agentos listens).
	{"", "net/http", "Runtime.UIHandler hands the embedder the console's http.Handler; it never listens", ""},
	{"console", "net/http", "the web console's http.Handler (pages, login, server-sent events); it never listens (cmd/agentos does)", ""},

	// The metrics exposition.
	{"internal/metricsserver", "net", "the metrics endpoint's TCP listener (metrics_addr)", ""},
	{"internal/metricsserver", "net/http", "the /metrics endpoint (promhttp over the runtime's own registry)", ""},

	// The cluster member: protoactor's remote is gRPC (its own sockets), and
	// the "seeds" provider's health endpoint needs a listener of ours.
	{"cluster", "net", "the seeds provider's health endpoint listens on the member's host (Options.HealthListener/HealthPort), not on protoactor's 0.0.0.0", ""},

	// The examples are demonstration programs: each makes its own temporary
	// tool root, and one serves prices on loopback for a tool to fetch.
	{"examples/cluster-three-nodes", osFiles, "a demonstration program: its temporary tool roots, the upstream, the signing key in the environment", ""},
	{"examples/mcp-serve", osFiles, "a demonstration program: its temporary tool root", ""},
	{"examples/governance-approval", osFiles, "a demonstration program: its temporary tool root", ""},
	{"examples/forge-scripted-model", osFiles, "a demonstration program: its temporary tool root", ""},
	{"examples/replay-debug-patched", osFiles, "a demonstration program: its temporary tool root and the buggy tool's source", ""},
	{"examples/replay-debug-patched", "net/http", "a demonstration program: an httptest server on loopback for the tool to fetch from", ""},
	{"examples/mcp-tools-as-code", osFiles, "a demonstration program: its temporary tool root", ""},
	{"examples/mcp-tools-as-code", "net", "a demonstration program: the MCP server's loopback listener", ""},
	{"examples/mcp-tools-as-code", "net/http", "a demonstration program: serves the MCP server over streamable HTTP on loopback", ""},
	{"examples/mcp-pii", osFiles, "a demonstration program: its temporary tool root, its journal read back to show it holds no real value", ""},
	{"examples/governance-gate", osFiles, "a demonstration program: its temporary tool root and upstream, the tool's fixed versions", ""},
	{"examples/mcp-pii", "net/http", "a demonstration program: an httptest server on loopback as the CRM and the audit log", ""},
	{"examples/runtime-two-agents", osFiles, "a demonstration program: its temporary tool root", ""},
	{"examples/agents-memory", osFiles, "a demonstration program: its temporary tool root and the documents its agent reads", ""},
	{"examples/supervision-quotas", osFiles, "a demonstration program: its temporary tool root", ""},

	// Test and benchmark helpers (imported only by _test files).
	{"internal/loopport", "net", "picks free loopback ports for servers bound later (a cluster's nodes, the throwaway PostgreSQL and etcd): listens to check each is free", ""},
	{"internal/loopport", osFiles, "reads the kernel's ephemeral port range (/proc/sys/net/ipv4/ip_local_port_range) to draw ports below it", ""},
	{"internal/pgtest", osExec, "test and demo helper: starts a throwaway PostgreSQL server (initdb, postgres)", ""},
	{"internal/pgtest", "syscall", "test helper: kills the PostgreSQL server's process group", ""},
	{"internal/pgtest", osFiles, "test helper: the PostgreSQL server's data directory", ""},
	{"internal/testutil", "syscall", "test helper: pauses a test's child process (SIGSTOP) for the fault tests", ""},
	{"internal/testutil", osFiles, "test helper: reads /proc/PID/task/*/stat to wait until a paused process's every thread has stopped", ""},
	{"internal/etcdtest", osExec, "test helper: starts a throwaway etcd server", ""},
	{"internal/etcdtest", "net/http", "test helper: waits for etcd's /health", ""},
	{"internal/etcdtest", "syscall", "test helper: kills the etcd server's process group", ""},
	{"internal/npmtest", osExec, "test helper: runs npm install for the tests that drive real JavaScript MCP clients and servers", ""},
	{"internal/npmtest", osFiles, "test helper: the folder npm installs into", ""},
	{"internal/mcptest", "net", "test and example helper: the MCP test server's loopback listener", ""},
	{"internal/mcptest", "net/http", "test and example helper: serves the MCP test server over streamable HTTP", ""},
	{"internal/benchutil", "syscall", "benchmark helper: reads the process's CPU time (getrusage)", ""},
}

// osFileFuncs are the functions of package os that reach the file system or
// start a process.
var osFileFuncs = map[string]string{
	"Open": osFiles, "OpenFile": osFiles, "Create": osFiles, "CreateTemp": osFiles,
	"ReadFile": osFiles, "WriteFile": osFiles, "ReadDir": osFiles,
	"Remove": osFiles, "RemoveAll": osFiles, "Rename": osFiles,
	"Mkdir": osFiles, "MkdirAll": osFiles, "MkdirTemp": osFiles,
	"Symlink": osFiles, "Link": osFiles, "Readlink": osFiles, "Truncate": osFiles,
	"Chmod": osFiles, "Chown": osFiles, "Lchown": osFiles, "Chtimes": osFiles, "Chdir": osFiles,
	"Stat": osFiles, "Lstat": osFiles, "DirFS": osFiles, "OpenRoot": osFiles, "OpenInRoot": osFiles, "CopyFS": osFiles,
	"StartProcess": osExec,
}

// filepathFileFuncs are the functions of path/filepath that read the file
// system (the others only compute paths).
var filepathFileFuncs = map[string]bool{"Walk": true, "WalkDir": true, "Glob": true, "EvalSymlinks": true}

// use is one use of a forbidden resource.
type use struct {
	pkg      string // relative to module
	resource string
	where    string // file:line and what
}

// resourceOf maps an import path to the forbidden resource it is, or "".
func resourceOf(path string) string {
	for _, f := range forbidden {
		if f.name == osFiles {
			continue
		}
		if path == f.name || (f.name != "net" && strings.HasPrefix(path, f.name+"/")) {
			return f.name
		}
	}
	return ""
}

// scanFile lists the forbidden resources file uses.
func scanFile(pkg, file string) ([]use, error) {
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []use
	at := func(p token.Pos) string {
		pos := fset.Position(p)
		return fmt.Sprintf("%s:%d", filepath.Base(pos.Filename), pos.Line)
	}
	osName, fpName := "", ""
	for _, im := range af.Imports {
		path, err := strconv.Unquote(im.Path.Value)
		if err != nil {
			return nil, err
		}
		local := ""
		if im.Name != nil {
			local = im.Name.Name
		}
		switch path {
		case "os":
			osName = cmpOr(local, "os")
		case "path/filepath":
			fpName = cmpOr(local, "filepath")
		}
		if r := resourceOf(path); r != "" {
			out = append(out, use{pkg, r, at(im.Pos()) + " imports " + path})
		}
	}
	if osName == "" && fpName == "" {
		return out, nil
	}
	ast.Inspect(af, func(n ast.Node) bool {
		s, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := s.X.(*ast.Ident)
		if !ok {
			return true
		}
		switch {
		case id.Name == osName && osFileFuncs[s.Sel.Name] != "":
			out = append(out, use{pkg, osFileFuncs[s.Sel.Name], at(s.Pos()) + " os." + s.Sel.Name})
		case id.Name == fpName && filepathFileFuncs[s.Sel.Name]:
			out = append(out, use{pkg, osFiles, at(s.Pos()) + " filepath." + s.Sel.Name})
		}
		return true
	})
	return out, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// listed is one package of `go list -json`.
type listed struct {
	ImportPath                        string
	Dir                               string
	GoFiles, CgoFiles, IgnoredGoFiles []string
}

// scanPackage lists the uses of a package's non-test files, for every
// platform (the files go list ignores for this one included).
func scanPackage(p listed) ([]use, error) {
	pkg := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
	var out []use
	files := slices.Concat(p.GoFiles, p.CgoFiles, p.IgnoredGoFiles)
	sort.Strings(files)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || !strings.HasSuffix(f, ".go") {
			continue
		}
		u, err := scanFile(pkg, filepath.Join(p.Dir, f))
		if err != nil {
			return nil, err
		}
		out = append(out, u...)
	}
	return out, nil
}

// owned says whether pkg is an owner or under one.
func owned(pkg string) bool {
	for _, o := range owners {
		if pkg == o.pkg || strings.HasPrefix(pkg, o.pkg+"/") {
			return true
		}
	}
	return false
}

// check returns the uses not allowed, and the exceptions not used.
func check(uses []use) (violations []use, stale []string) {
	type key struct{ pkg, resource string }
	allowed := map[key]bool{}
	for _, e := range exceptions {
		allowed[key{e.pkg, e.resource}] = true
	}
	used := map[key]bool{}
	for _, u := range uses {
		if owned(u.pkg) {
			continue
		}
		k := key{u.pkg, u.resource}
		used[k] = true
		if !allowed[k] {
			violations = append(violations, u)
		}
	}
	for _, e := range exceptions {
		if !used[key{e.pkg, e.resource}] {
			stale = append(stale, fmt.Sprintf("%q may use %q, but no longer does: remove the entry from exceptions", e.pkg, e.resource))
		}
	}
	return violations, stale
}

func goList(t *testing.T) []listed {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -json ./...: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages in %s", len(pkgs), cmd.Dir)
	}
	return pkgs
}

// TestOnlyOwnersTouchTheHost is the architecture rule (see the package
// doc): outside the owners, a package uses os/exec, the network, raw
// system calls, a database engine or the os file APIs only as the
// exceptions table allows, with its reason.
func TestOnlyOwnersTouchTheHost(t *testing.T) {
	var uses []use
	for _, p := range goList(t) {
		u, err := scanPackage(p)
		if err != nil {
			t.Fatal(err)
		}
		uses = append(uses, u...)
	}
	violations, stale := check(uses)
	for _, v := range violations {
		t.Errorf("package %q uses %s (%s): only %s may; ask one of them, or add an entry with the reason to exceptions in internal/archcheck/archcheck_test.go",
			cmpOr(v.pkg, "(root)"), v.resource, v.where, ownerList())
	}
	for _, s := range stale {
		t.Error(s)
	}
	for _, e := range exceptions {
		if e.todo != "" {
			t.Logf("known violation, to fix: %q uses %q: %s", cmpOr(e.pkg, "(root)"), e.resource, e.todo)
		}
	}
}

func ownerList() string {
	var s []string
	for _, o := range owners {
		s = append(s, o.pkg)
	}
	return strings.Join(s, ", ")
}

// TestTablesAreConsistent: every exception names a forbidden resource,
// says why or what to do, and is not under an owner; every resource says
// why it is forbidden.
func TestTablesAreConsistent(t *testing.T) {
	names := map[string]bool{}
	for _, f := range forbidden {
		if f.why == "" {
			t.Errorf("forbidden %q says not why", f.name)
		}
		names[f.name] = true
	}
	seen := map[string]bool{}
	for _, e := range exceptions {
		if !names[e.resource] {
			t.Errorf("exception %q/%q: %q is not a forbidden resource", e.pkg, e.resource, e.resource)
		}
		if e.why == "" && e.todo == "" {
			t.Errorf("exception %q/%q says neither why nor what to do", e.pkg, e.resource)
		}
		if owned(e.pkg) {
			t.Errorf("exception %q/%q: the package is an owner's", e.pkg, e.resource)
		}
		if k := e.pkg + "\x00" + e.resource; seen[k] {
			t.Errorf("exception %q/%q is listed twice", e.pkg, e.resource)
		} else {
			seen[k] = true
		}
	}
}

// TestScanFindsEachKind: the scanner, on files written here, finds each
// kind of use (aliased imports included) and nothing in a _test.go file or
// in a pure import (net/url), and check reports them outside the owners
// only.
func TestScanFindsEachKind(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", `package p

import (
	"net/url"
	x "os/exec"
	goos "os"
	fp "path/filepath"
	"net/http/httptest"
	bolt "go.etcd.io/bbolt"
)

var _ = url.Parse
var _ = x.Command
var _ = httptest.NewServer
var _ = bolt.Open

func f() {
	goos.WriteFile("x", nil, 0)
	_ = goos.Getenv("HOME")
	fp.WalkDir(".", nil)
	_ = fp.Join("a", "b")
	goos.StartProcess("x", nil, nil)
}
`)
	write("a_test.go", "package p\n\nimport \"net\"\n\nvar _ = net.Dial\n")
	p := listed{ImportPath: module + "/some/pkg", Dir: dir, GoFiles: []string{"a.go"}, IgnoredGoFiles: []string{"a_test.go"}}
	uses, err := scanPackage(p)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range uses {
		got = append(got, u.resource+" @ "+u.where)
	}
	want := []string{
		"os/exec @ a.go:5 imports os/exec",
		"net/http @ a.go:8 imports net/http/httptest",
		"go.etcd.io/bbolt @ a.go:9 imports go.etcd.io/bbolt",
		"os files @ a.go:18 os.WriteFile",
		"os files @ a.go:20 filepath.WalkDir",
		"os/exec @ a.go:22 os.StartProcess",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("uses:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if v, _ := check(uses); len(v) != len(want) {
		t.Fatalf("check reported %d violations in some/pkg, want %d", len(v), len(want))
	}
	for i := range uses {
		uses[i].pkg = "actors/executor/internal/x"
	}
	if v, _ := check(uses); len(v) != 0 {
		t.Fatalf("check reported %v under an owner", v)
	}
}
