package repo_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/git/repo"
)

var ctx = context.Background()

// TestHydrate: a tool committed upstream with plain go-git appears in the
// tool root; after a new upstream commit a second Hydrate fast-forwards.
// PATH is empty: nothing may run the git binary.
func TestHydrate(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	up := newUpstream(t)
	plainCommit(t, up, "main", map[string]string{"tools/hello.ts": `export default () => "hydrated"`}, "Add tool")

	dir := filepath.Join(t.TempDir(), "root")
	if _, err := os.Stat(filepath.Join(dir, "tools/hello.ts")); err == nil {
		t.Fatal("tool present before Hydrate")
	}
	r := hydrate(t, dir, up)
	if got := readFile(t, dir, "tools/hello.ts"); got != `export default () => "hydrated"` {
		t.Fatalf("hydrated content = %q", got)
	}
	head, _ := r.Head()
	if want := upstreamCommit(t, up, "main").Hash.String(); head != want {
		t.Fatalf("Head = %s, upstream = %s", head, want)
	}
	must(t, r.Close())
	if _, err := r.Head(); !errors.Is(err, repo.ErrClosed) {
		t.Fatalf("Head after Close: %v", err)
	}

	second := plainCommit(t, up, "main", map[string]string{"tools/bye.ts": "export default () => 1", "tools/hello.ts": "v2"}, "More tools")
	r2 := hydrate(t, dir, up)
	if head, _ := r2.Head(); head != second.String() {
		t.Fatalf("second Hydrate: Head = %s, want %s (fast-forward)", head, second)
	}
	if readFile(t, dir, "tools/bye.ts") != "export default () => 1" || readFile(t, dir, "tools/hello.ts") != "v2" {
		t.Fatal("second Hydrate did not update the working tree")
	}
	if l := lockFiles(dir); len(l) > 0 {
		t.Fatalf("lock files left: %v", l)
	}
}

// TestFabrication: Persist makes one upstream commit with the message and
// the author; persisting unchanged content is a no-op.
func TestFabrication(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	r := hydrate(t, dir, up, func(o *repo.Options) { o.AuthorName, o.AuthorEmail = "forge", "forge@agentos.test" })
	writeFile(t, dir, "tools/a.ts", "export default () => 'a'")
	p, err := r.Persist(ctx, []string{"tools/a.ts"}, "write tools/a.ts")
	must(t, err)
	c := upstreamCommit(t, up, "main")
	if p.Commit != c.Hash.String() || p.Branch != "main" || p.Attempts != 1 {
		t.Fatalf("Persisted = %+v, upstream head %s", p, c.Hash)
	}
	if strings.TrimSpace(c.Message) != "write tools/a.ts" {
		t.Fatalf("message = %q", c.Message)
	}
	if c.Author.Name != "forge" || c.Author.Email != "forge@agentos.test" {
		t.Fatalf("author = %v", c.Author)
	}
	if got := upstreamFiles(t, up, "main")["tools/a.ts"]; got != "export default () => 'a'" {
		t.Fatalf("upstream content = %q", got)
	}
	n := len(history(t, up, "main"))

	again, err := r.Persist(ctx, []string{"tools/a.ts"}, "write tools/a.ts")
	must(t, err)
	if again.Attempts != 0 || again.Commit != p.Commit || len(history(t, up, "main")) != n {
		t.Fatalf("unchanged Persist made a commit: %+v", again)
	}

	// A deletion is a change too.
	must(t, os.Remove(filepath.Join(dir, "tools/a.ts")))
	_, err = r.Persist(ctx, []string{"tools/a.ts"}, "delete tools/a.ts")
	must(t, err)
	if _, ok := upstreamFiles(t, up, "main")["tools/a.ts"]; ok {
		t.Fatal("deleted file still upstream")
	}
}

// TestColdStart: a tool written and persisted by one node is byte for byte
// the same in a fresh tool root hydrated later.
func TestColdStart(t *testing.T) {
	up := newUpstream(t)
	a := t.TempDir()
	ra := hydrate(t, a, up)
	src := "/** Fibonacci. */\nexport default function fib({ n }: { n: number }): number {\n  return n < 2 ? n : fib({ n: n - 1 }) + fib({ n: n - 2 });\n}\n\x00\xff"
	writeFile(t, a, "tools/math/fib.ts", src)
	_, err := ra.Persist(ctx, []string{"tools/math/fib.ts"}, "Forge: tools/math/fib.ts")
	must(t, err)
	must(t, ra.Close())

	b := filepath.Join(t.TempDir(), "next-agent")
	hydrate(t, b, up)
	if got := readFile(t, b, "tools/math/fib.ts"); got != src {
		t.Fatalf("cold start content differs:\n got %q\nwant %q", got, src)
	}
}

// TestHydrateKeepsLocalFiles: files already in the tool root (agentos.json)
// survive the first Hydrate; agentos.json (the node's security
// configuration, issue 10 item 12) and the .agentos/ directory are never
// committed.
func TestHydrateKeepsLocalFiles(t *testing.T) {
	up := newUpstream(t)
	plainCommit(t, up, "main", map[string]string{"tools/up.ts": "up"}, "upstream tool")
	dir := t.TempDir()
	writeFile(t, dir, "agentos.json", `{"name":"demo"}`)
	writeFile(t, dir, ".agentos/journal.db", "journal")
	writeFile(t, dir, ".agentos/run/x.sock", "socket")
	r := hydrate(t, dir, up)
	if readFile(t, dir, "agentos.json") != `{"name":"demo"}` || readFile(t, dir, "tools/up.ts") != "up" {
		t.Fatal("Hydrate lost a local file or missed an upstream one")
	}
	writeFile(t, dir, "tools/b.ts", "b")
	_, err := r.Persist(ctx, []string{"tools/b.ts", ".agentos/journal.db"}, "write tools/b.ts")
	must(t, err)
	files := upstreamFiles(t, up, "main")
	if _, ok := files["agentos.json"]; ok || files["tools/b.ts"] != "b" || files["tools/up.ts"] != "up" {
		t.Fatalf("upstream files = %v (agentos.json must never be committed)", files)
	}
	if readFile(t, dir, "agentos.json") != `{"name":"demo"}` {
		t.Fatal("the local agentos.json changed")
	}
	for p := range files {
		if strings.HasPrefix(p, ".agentos") {
			t.Fatalf("%s was committed", p)
		}
	}
}

// TestPathErrors: paths outside the tool root are refused.
func TestPathErrors(t *testing.T) {
	up := newUpstream(t)
	r := hydrate(t, t.TempDir(), up)
	for _, p := range []string{"../x.ts", "/etc/passwd", ".git/config", "tools/../../x"} {
		if _, err := r.Persist(ctx, []string{p}, "bad"); !errors.Is(err, repo.ErrPath) {
			t.Errorf("Persist(%q) = %v, want ErrPath", p, err)
		}
	}
}

// TestOptionsErrors: required options and credential-carrying URLs.
func TestOptionsErrors(t *testing.T) {
	for _, o := range []repo.Options{
		{Upstream: "/tmp/x"},
		{Dir: t.TempDir()},
		{Dir: t.TempDir(), Upstream: "https://x-access-token:s3cr3t-token@example.com/o/r.git"},
		{Dir: t.TempDir(), Upstream: "http://example.com/o/r.git"},
		{Dir: t.TempDir(), Upstream: "ssh://example.com/o/r.git"},
		{Dir: t.TempDir(), Upstream: "/tmp/x", Strategy: "yolo"},
	} {
		_, err := repo.Hydrate(ctx, o)
		if !errors.Is(err, repo.ErrOptions) {
			t.Errorf("Hydrate(%+v) = %v, want ErrOptions", o, err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t-token") {
			t.Errorf("error leaks the credential: %v", err)
		}
	}
}

// TestConflict: the same tool written differently by two nodes: the later
// writer gets ErrConflict naming a branch that holds its version; main keeps
// the first.
func TestConflict(t *testing.T) {
	up := newUpstream(t)
	a, b := t.TempDir(), t.TempDir()
	ra, rb := hydrate(t, a, up), hydrate(t, b, up)

	writeFile(t, a, "tools/x.ts", "export default () => 'A'")
	_, err := ra.Persist(ctx, []string{"tools/x.ts"}, "write tools/x.ts (A)")
	must(t, err)

	writeFile(t, b, "tools/x.ts", "export default () => 'B'")
	writeFile(t, b, "tools/other.ts", "other")
	p, err := rb.Persist(ctx, []string{"tools/x.ts"}, "write tools/x.ts (B)")
	if !errors.Is(err, repo.ErrConflict) {
		t.Fatalf("second writer: err = %v, want ErrConflict", err)
	}
	var ce *repo.ConflictError
	if !errors.As(err, &ce) || ce.Tool != "x" || !strings.HasPrefix(ce.Branch, "conflict/x-") || ce.Base != "main" {
		t.Fatalf("ConflictError = %+v", ce)
	}
	if !strings.Contains(err.Error(), ce.Branch) || !strings.Contains(err.Error(), "x") {
		t.Fatalf("error does not name the tool and branch: %v", err)
	}
	if p.Branch != ce.Branch {
		t.Fatalf("Persisted.Branch = %q, want %q", p.Branch, ce.Branch)
	}
	if got := upstreamFiles(t, up, ce.Branch)["tools/x.ts"]; got != "export default () => 'B'" {
		t.Fatalf("conflict branch content = %q", got)
	}
	if got := upstreamFiles(t, up, "main")["tools/x.ts"]; got != "export default () => 'A'" {
		t.Fatalf("main content = %q", got)
	}
	if got := readFile(t, b, "tools/x.ts"); got != "export default () => 'A'" {
		t.Fatalf("B's working tree = %q, want upstream's version", got)
	}
	// B goes on working: its next write is based on the upstream.
	writeFile(t, b, "tools/y.ts", "y")
	_, err = rb.Persist(ctx, []string{"tools/y.ts"}, "write tools/y.ts")
	must(t, err)
	files := upstreamFiles(t, up, "main")
	if files["tools/y.ts"] != "y" || files["tools/x.ts"] != "export default () => 'A'" {
		t.Fatalf("main after B's next write: %v", files)
	}
	if _, ok := files["tools/other.ts"]; ok {
		t.Fatal("a file never persisted was committed")
	}
}

// TestSameContentIsNoConflict: two nodes writing the same bytes agree.
func TestSameContentIsNoConflict(t *testing.T) {
	up := newUpstream(t)
	a, b := t.TempDir(), t.TempDir()
	ra, rb := hydrate(t, a, up), hydrate(t, b, up)
	for _, d := range []string{a, b} {
		writeFile(t, d, "tools/same.ts", "same")
	}
	_, err := ra.Persist(ctx, []string{"tools/same.ts"}, "a")
	must(t, err)
	p, err := rb.Persist(ctx, []string{"tools/same.ts"}, "b")
	must(t, err)
	if p.Commit != upstreamCommit(t, up, "main").Hash.String() {
		t.Fatalf("Persisted %+v is not the upstream head", p)
	}
	if n := len(history(t, up, "main")); n != 2 {
		t.Fatalf("%d commits, want 2 (no empty commit)", n)
	}
}

// TestUnpushedCommitSurvives: when the upstream is unreachable, Persist
// fails but keeps its commit; the next Hydrate pushes it.
func TestUnpushedCommitSurvives(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	r := hydrate(t, dir, up)
	// Another node moves main meanwhile.
	plainCommit(t, up, "main", map[string]string{"tools/theirs.ts": "theirs"}, "theirs")

	away := up + ".away"
	must(t, os.Rename(up, away))
	writeFile(t, dir, "tools/mine.ts", "mine")
	if _, err := r.Persist(ctx, []string{"tools/mine.ts"}, "write tools/mine.ts"); !errors.Is(err, repo.ErrUpstream) {
		t.Fatalf("Persist with the upstream gone: %v, want ErrUpstream", err)
	}
	must(t, r.Close())
	must(t, os.Rename(away, up))

	r2 := hydrate(t, dir, up)
	files := upstreamFiles(t, up, "main")
	if files["tools/mine.ts"] != "mine" || files["tools/theirs.ts"] != "theirs" {
		t.Fatalf("upstream after Hydrate: %v", files)
	}
	if head, _ := r2.Head(); head != upstreamCommit(t, up, "main").Hash.String() {
		t.Fatal("Head is not the upstream head")
	}
	var msgs []string
	for _, c := range history(t, up, "main") {
		msgs = append(msgs, strings.TrimSpace(c.Message))
	}
	if msgs[0] != "write tools/mine.ts" {
		t.Fatalf("history = %v", msgs)
	}
}

// TestUncommittedChangesKept: a file written but never persisted (a kill
// between write and Persist) survives a Hydrate that moves the tree and
// reaches the upstream. Issue 11 item 2: it reaches it under its own
// commit ("agentos: recover unsaved ..."), made by that Hydrate, and never
// inside the next, unrelated Persist (which used to sweep it in under its
// own message): the next Persist's commit holds exactly its own file.
func TestUncommittedChangesKept(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	r := hydrate(t, dir, up)
	writeFile(t, dir, "tools/a.ts", "a1")
	_, err := r.Persist(ctx, []string{"tools/a.ts"}, "a1")
	must(t, err)
	must(t, r.Intend("tools/a.ts", []byte("a2")))
	writeFile(t, dir, "tools/a.ts", "a2") // modified, not persisted
	must(t, r.Intend("tools/new.ts", []byte("fresh")))
	writeFile(t, dir, "tools/new.ts", "fresh") // new, not persisted
	must(t, r.Close())
	plainCommit(t, up, "main", map[string]string{"tools/b.ts": "b"}, "b")

	r2 := hydrate(t, dir, up)
	if readFile(t, dir, "tools/a.ts") != "a2" || readFile(t, dir, "tools/new.ts") != "fresh" || readFile(t, dir, "tools/b.ts") != "b" {
		t.Fatal("Hydrate lost an uncommitted change or missed the upstream's")
	}
	writeFile(t, dir, "tools/c.ts", "c")
	_, err = r2.Persist(ctx, []string{"tools/c.ts"}, "c")
	must(t, err)
	files := upstreamFiles(t, up, "main")
	for p, want := range map[string]string{"tools/a.ts": "a2", "tools/new.ts": "fresh", "tools/b.ts": "b", "tools/c.ts": "c"} {
		if files[p] != want {
			t.Errorf("upstream %s = %q, want %q", p, files[p], want)
		}
	}
	hist := history(t, up, "main")
	if got := strings.Join(commitPaths(t, hist[0]), ","); strings.TrimSpace(hist[0].Message) != "c" || got != "tools/c.ts" {
		t.Fatalf("the Persist of tools/c.ts committed %q under %q: a write persists exactly its own file", got, strings.TrimSpace(hist[0].Message))
	}
	if got := strings.Join(commitPaths(t, hist[1]), ","); !strings.HasPrefix(hist[1].Message, "agentos: recover unsaved tools/a.ts, tools/new.ts\n") || got != "tools/a.ts,tools/new.ts" {
		t.Fatalf("the unsaved files were not recovered under their own commit: %q with %q", got, hist[1].Message)
	}
}

// TestGitStatusClean: the index written for humans (at Hydrate and Close)
// matches the tree.
func TestGitStatusClean(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	r := hydrate(t, dir, up)
	writeFile(t, dir, "tools/a.ts", "a")
	_, err := r.Persist(ctx, []string{"tools/a.ts"}, "a")
	must(t, err)
	must(t, r.Close())
	st := plainStatus(t, dir)
	if !st.IsClean() {
		t.Fatalf("git status after Close:\n%s", st)
	}
	writeFile(t, dir, "tools/a.ts", "changed")
	if st := plainStatus(t, dir); st.IsClean() {
		t.Fatal("git status misses a change")
	}
}

// TestRepack: many persists do not pile up packs in the tool root, and
// every object stays readable.
func TestRepack(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	r := hydrate(t, dir, up)
	for i := 0; i < 40; i++ {
		p := "tools/r/t" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + ".ts"
		writeFile(t, dir, p, strings.Repeat("y", i))
		_, err := r.Persist(ctx, []string{p}, "write "+p)
		must(t, err)
	}
	must(t, r.Close())
	packs, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.pack"))
	if len(packs) > 17 {
		t.Fatalf("%d packs in the tool root", len(packs))
	}
	if st := plainStatus(t, dir); !st.IsClean() {
		t.Fatalf("git status after repacks:\n%s", st)
	}
	r2 := hydrate(t, dir, up)
	head, _ := r2.Head()
	if head != upstreamCommit(t, up, "main").Hash.String() {
		t.Fatal("Head differs from upstream after repacks")
	}
}

// Issue 25 item 11: after a writer was killed, the next start committed
// every file that differed from the tree, hand-written ones included (a
// tool 'agentos check' rejects, a user's data file). Recovery commits only
// what a write recorded its intent for, with the content it recorded;
// everything else stays in the working tree, uncommitted, and is never
// swept into a later Persist.
func TestRecoveryCommitsOnlyIntendedWrites(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	var logs bytes.Buffer
	logTo := func(o *repo.Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) }
	r := hydrate(t, dir, up, logTo)
	must(t, r.Intend("tools/written.ts", []byte("by a write")))
	writeFile(t, dir, "tools/written.ts", "by a write") // killed before Persist
	must(t, r.Intend("tools/edited.ts", []byte("by a write")))
	writeFile(t, dir, "tools/edited.ts", "then by hand") // the intended content was replaced
	writeFile(t, dir, "tools/hand.ts", "by hand")
	writeFile(t, dir, "data/users.csv", "alice,alice@example.com")
	must(t, r.Close())

	r = hydrate(t, dir, up, logTo)
	files := upstreamFiles(t, up, "main")
	if files["tools/written.ts"] != "by a write" {
		t.Fatalf("the interrupted write was not recovered: upstream %v", files)
	}
	for _, p := range []string{"tools/edited.ts", "tools/hand.ts", "data/users.csv"} {
		if _, ok := files[p]; ok {
			t.Errorf("recovery committed %s, which no write left half-done", p)
		}
		if !strings.Contains(logs.String(), "path="+p) || !strings.Contains(logs.String(), "no agentos write of it was under way") {
			t.Errorf("no log line says %s was left uncommitted:\n%s", p, logs.String())
		}
	}
	if readFile(t, dir, "tools/hand.ts") != "by hand" || readFile(t, dir, "data/users.csv") != "alice,alice@example.com" {
		t.Fatal("a file left uncommitted was lost from the working tree")
	}
	writeFile(t, dir, "tools/c.ts", "c")
	_, err := r.Persist(ctx, []string{"tools/c.ts"}, "c")
	must(t, err)
	if files := upstreamFiles(t, up, "main"); files["tools/hand.ts"] != "" || files["data/users.csv"] != "" {
		t.Fatalf("a hand-written file was swept into another Persist: %v", files)
	}
}

// TestRecoveryKeepsHeldFilesLocal: a file left unsaved that Options.Hold
// refuses (a tool that does not compile) is neither recovered nor swept
// into a later Persist; it stays in the working tree, and the Persist that
// names it once Hold accepts it publishes it.
func TestRecoveryKeepsHeldFilesLocal(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	hold := func(o *repo.Options) {
		o.Hold = func(p string, b []byte) error {
			if strings.Contains(string(b), "broken") {
				return errors.New(p + " does not compile")
			}
			return nil
		}
	}
	r := hydrate(t, dir, up, hold)
	for p, c := range map[string]string{"tools/bad.ts": "broken", "tools/good.ts": "good"} {
		must(t, r.Intend(p, []byte(c)))
		writeFile(t, dir, p, c)
	}
	must(t, r.Close())
	r = hydrate(t, dir, up, hold)
	files := upstreamFiles(t, up, "main")
	if _, ok := files["tools/bad.ts"]; ok || files["tools/good.ts"] != "good" {
		t.Fatalf("upstream after recovery: %v (want good.ts recovered, bad.ts held)", files)
	}
	writeFile(t, dir, "tools/c.ts", "c")
	_, err := r.Persist(ctx, []string{"tools/c.ts"}, "c")
	must(t, err)
	if _, ok := upstreamFiles(t, up, "main")["tools/bad.ts"]; ok || readFile(t, dir, "tools/bad.ts") != "broken" {
		t.Fatal("a held file was swept into another Persist or lost from the working tree")
	}
	writeFile(t, dir, "tools/bad.ts", "fixed")
	_, err = r.Persist(ctx, []string{"tools/bad.ts"}, "fix bad")
	must(t, err)
	if upstreamFiles(t, up, "main")["tools/bad.ts"] != "fixed" {
		t.Fatal("the fixed file was not published")
	}
}
