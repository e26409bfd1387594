package vfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// linkedRoot is a tool root with agentos' state, a Git directory, the
// node's configuration and the links of issue 10 item 3: tools/state ->
// ../.agentos (as an upstream commit would check out), tools/g -> ../.git,
// tools/cfg -> ../agentos.json, out/up -> .. inside the write directory out,
// tools/j.db hard-linked to .agentos/journal.db, and two links that stay
// where they may: tools/alias.ts -> math/fib.ts and docs/fib.ts ->
// ../tools/math/fib.ts.
func linkedRoot(t *testing.T) (*Jail, string) {
	t.Helper()
	j, dir := newJail(t)
	files := map[string]string{
		".agentos/journal.db": "JOURNAL: other runs' I/O",
		".agentos/data.db":    "DATA: the tools' database",
		".git/config":         "[remote] url = secret",
		"agentos.json":        `{"write_dirs":["out"]}`,
		"tools/math/fib.ts":   "fib",
		"tools/pub/a.ts":      "pub",
		"tools/priv/b.ts":     "priv",
		"out/keep.txt":        "keep",
		"data/x.txt":          "data",
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(dir, "docs"), 0o755)
	for link, target := range map[string]string{
		"tools/state":    "../.agentos",
		"tools/g":        "../.git",
		"tools/cfg":      "../agentos.json",
		"tools/cfgdir":   "..",
		"tools/data":     "../data",
		"out/up":         "..",
		"tools/alias.ts": "math/fib.ts",
		"docs/fib.ts":    "../tools/math/fib.ts",
		"tools/loop":     "loop",
		"tools/abs":      filepath.Join(dir, "data"),
	} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(dir, ".agentos", "journal.db"), filepath.Join(dir, "tools", "j.db")); err != nil {
		t.Fatal(err)
	}
	return j, dir
}

func wantSecurity(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrSecurity) {
		t.Errorf("%s: want ErrSecurity, got %v", what, err)
	}
}

// Item 3: .agentos, .git and agentos.json are unreachable through any link,
// and a hard link is not read, whichever Jail or Sandbox method is used.
func TestLinksToHiddenStateRefused(t *testing.T) {
	j, dir := linkedRoot(t)
	for _, p := range []string{
		"tools/state/journal.db", "tools/state/data.db", "tools/g/config", "tools/cfg",
		"tools/cfgdir/agentos.json", "tools/cfgdir/.agentos/journal.db", "out/up/.agentos/journal.db",
		"out/up/agentos.json", "tools/j.db", "tools/abs/x.txt",
	} {
		b, err := j.ReadFile(p)
		wantSecurity(t, "Jail.ReadFile "+p, err)
		if len(b) > 0 {
			t.Errorf("Jail.ReadFile %s returned %q", p, b)
		}
		_, err = j.Stat(p)
		if p != "tools/j.db" { // a hard link is refused when read, not when statted
			wantSecurity(t, "Jail.Stat "+p, err)
		}
	}
	if _, err := j.ReadFile("tools/loop"); err == nil || !strings.Contains(err.Error(), "symbolic links") {
		t.Errorf("a link loop: %v", err)
	}
	if _, err := j.List("tools/state"); !errors.Is(err, ErrSecurity) {
		t.Errorf("List tools/state: %v", err)
	}
	for _, p := range []string{"tools/state/new", "tools/g/hooks/post-checkout", "out/up/agentos.json", "tools/cfg"} {
		wantSecurity(t, "Jail.WriteFile "+p, j.WriteFile(p, []byte("pwned")))
	}

	s := NewSandbox(j, SandboxConfig{WriteDirs: []string{"out"}, TempDir: t.TempDir()})
	defer s.Close()
	for _, p := range []string{
		"/lib/state/journal.db", "/lib/state/data.db", "/lib/g/config", "/lib/cfg", "/lib/j.db",
		"tools/state/journal.db", "out/up/.agentos/data.db", "out/up/agentos.json",
	} {
		b, err := s.ReadFile(p)
		wantSecurity(t, "Sandbox.ReadFile "+p, err)
		if len(b) > 0 {
			t.Errorf("Sandbox.ReadFile %s returned %q", p, b)
		}
		if _, err := s.Size(p); err == nil && p != "/lib/j.db" {
			t.Errorf("Sandbox.Size %s: no error", p)
		}
	}
	for _, p := range []string{
		"out/up/agentos.json", "out/up/tools/evil.ts", "out/up/.agentos/journal.db", "out/up/x.txt",
		"out/up/out/up/tools/evil.ts", "/lib/state/x", "agentos.json",
	} {
		wantSecurity(t, "Sandbox.WriteFile "+p, s.WriteFile(p, []byte("pwned")))
	}
	for _, dir := range []string{"/lib", "tools", "out", "."} {
		names, err := s.List(dir)
		if err != nil {
			t.Fatalf("List %s: %v", dir, err)
		}
		for _, n := range names {
			if strings.Contains(n, "state") || strings.Contains(n, "/g/") || strings.HasSuffix(n, "/cfg") || strings.Contains(n, "cfgdir") || strings.Contains(n, "/up/") || strings.Contains(n, "abs") {
				t.Errorf("List %s shows %q", dir, n)
			}
		}
	}

	if b, _ := os.ReadFile(filepath.Join(dir, "agentos.json")); string(b) != `{"write_dirs":["out"]}` {
		t.Errorf("agentos.json changed: %q", b)
	}
	for _, p := range []string{"tools/evil.ts", "x.txt", "tools/state/new", ".git/hooks/post-checkout"} {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p))); err == nil {
			t.Errorf("%s was written through a link", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".agentos", "journal.db")); string(b) != "JOURNAL: other runs' I/O" {
		t.Errorf("the journal changed: %q", b)
	}
}

// Links that stay where the path may go keep working, and every check is
// on where they lead: /lib never leads out of the tools directory.
func TestLinksInsideTheirAreaFollowed(t *testing.T) {
	j, dir := linkedRoot(t)
	for p, want := range map[string]string{"tools/alias.ts": "tools/math/fib.ts", "docs/fib.ts": "tools/math/fib.ts", "tools/data/x.txt": "data/x.txt", "out/new/y.txt": "out/new/y.txt", "tools/state": ""} {
		got, err := j.Resolve(p)
		if want == "" {
			wantSecurity(t, "Resolve "+p, err)
			continue
		}
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", p, got, err, want)
		}
	}
	s := NewSandbox(j, SandboxConfig{WriteDirs: []string{"out"}, TempDir: t.TempDir()})
	defer s.Close()
	for p, want := range map[string]string{"/lib/alias.ts": "fib", "docs/fib.ts": "fib", "tools/data/x.txt": "data"} {
		if b, err := s.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("ReadFile %s = %q, %v; want %q", p, b, err, want)
		}
	}
	// /lib is the tools directory: a link out of it is refused there.
	_, err := s.ReadFile("/lib/data/x.txt")
	wantSecurity(t, "/lib/data/x.txt", err)
	if err == nil || !strings.Contains(err.Error(), "outside /lib") {
		t.Errorf("the refusal does not say why: %v", err)
	}
	ls, err := s.List("/lib")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/lib/alias.ts", "/lib/math/fib.ts", "/lib/priv/b.ts", "/lib/pub/a.ts"}; !reflect.DeepEqual(ls, want) {
		t.Errorf("List /lib = %v, want %v", ls, want)
	}
	// A write follows a link only where it leads into a write directory.
	if err := s.WriteFile("out/r.txt", []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../data", filepath.Join(dir, "out", "d")); err != nil {
		t.Fatal(err)
	}
	err = s.WriteFile("out/d/x.txt", []byte("pwned"))
	wantSecurity(t, "write out/d/x.txt", err)
	if err == nil || !strings.Contains(err.Error(), "resolves (through a symbolic link) to data/x.txt") {
		t.Errorf("the refusal does not name where the link leads: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "data", "x.txt")); string(b) != "data" {
		t.Errorf("data/x.txt changed: %q", b)
	}
	// Removing a link removes the link, not its target.
	if err := j.Remove("docs/fib.ts"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "tools", "math", "fib.ts")); string(b) != "fib" {
		t.Errorf("Remove of a link touched its target: %q", b)
	}
}

// fakeRights grants read and write on path prefixes and records checks.
type fakeRights struct {
	read, write []string
	asked       []string
}

func (f *fakeRights) Covers(a Access, p string) bool {
	scopes := f.read
	if a == AccessWrite {
		scopes = f.write
	}
	for _, s := range scopes {
		if strings.HasPrefix(p, s) {
			return true
		}
	}
	return false
}

func (f *fakeRights) Allow(a Access, p string) error {
	f.asked = append(f.asked, string(a)+" "+p)
	if f.Covers(a, p) {
		return nil
	}
	return fmt.Errorf("capability does not grant this right: lacks the %q right on %q", a, p)
}

// Item 4 at the vfs level: with Rights set, every operation on the root is
// checked on the resolved path; /tmp is the run's own.
func TestSandboxChecksCallerRights(t *testing.T) {
	j, dir := linkedRoot(t)
	os.Symlink("../priv/b.ts", filepath.Join(dir, "tools", "pub", "sneaky.ts"))
	// The caller may read tools/alias.ts by name, not tools/math/fib.ts, where it leads.
	r := &fakeRights{read: []string{"tools/pub/", "tools/alias.ts", "out/"}}
	s := NewSandbox(j, SandboxConfig{WriteDirs: []string{"out"}, TempDir: t.TempDir(), Rights: r})
	defer s.Close()

	if b, err := s.ReadFile("/lib/pub/a.ts"); err != nil || string(b) != "pub" {
		t.Fatalf("a granted read: %q %v", b, err)
	}
	for _, p := range []string{"agentos.json", "tools/priv/b.ts", "/lib/priv/b.ts", "/lib/pub/sneaky.ts", "data/x.txt", "/lib/alias.ts"} {
		_, err := s.ReadFile(p)
		wantSecurity(t, "read "+p, err)
		if err != nil && !strings.Contains(err.Error(), `"read" right`) {
			t.Errorf("read %s: the refusal does not name the right: %v", p, err)
		}
		if _, err := s.Size(p); err == nil {
			t.Errorf("Size %s leaks the size of a file the caller may not read", p)
		}
	}
	if _, err := s.ReadFile("/lib/alias.ts"); err == nil || !strings.Contains(err.Error(), "tools/math/fib.ts") {
		t.Errorf("a link's refusal names where it leads? %v", err)
	}
	for _, d := range []string{"tools/priv", "/lib/priv", ".", "/lib"} {
		_, err := s.List(d)
		wantSecurity(t, "list "+d, err)
	}
	ls, err := s.List("/lib/pub")
	if err != nil || !reflect.DeepEqual(ls, []string{"/lib/pub/a.ts"}) {
		t.Errorf("List /lib/pub = %v, %v: want only a.ts (sneaky.ts leads to tools/priv)", ls, err)
	}
	// out is a write directory, but the caller may not write there.
	err = s.WriteFile("out/new.txt", []byte("x"))
	wantSecurity(t, "write out/new.txt", err)
	if err == nil || !strings.Contains(err.Error(), `"write" right`) || !strings.Contains(err.Error(), "out/new.txt") {
		t.Errorf("the write refusal does not name the path and right: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "new.txt")); err == nil {
		t.Error("out/new.txt was written without the write right")
	}
	r.write = []string{"out/"}
	if err := s.WriteFile("out/new.txt", []byte("x")); err != nil {
		t.Errorf("a granted write: %v", err)
	}
	// /tmp is the run's own: no check.
	asked := len(r.asked)
	if err := s.WriteFile("/tmp/a.txt", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if b, err := s.ReadFile("/tmp/a.txt"); err != nil || string(b) != "x" {
		t.Fatalf("/tmp: %q %v", b, err)
	}
	if len(r.asked) != asked {
		t.Errorf("/tmp asked the caller's rights: %v", r.asked[asked:])
	}
}

// FuzzResolveThroughLinks puts a link of any target at tools/l and reads
// any path: whatever resolves is clean and inside the root, and no read, by
// any path, returns the content of .agentos, .git, agentos.json (unless asked
// by its own name) or a file outside the root.
func FuzzResolveThroughLinks(f *testing.F) {
	for _, s := range [][2]string{
		{"../.agentos", "tools/l/journal.db"}, {"..", "tools/l/agentos.json"}, {"../..", "tools/l/outside/secret"},
		{"../.git", "tools/l/config"}, {"a.ts", "tools/l"}, {"../../", "tools/l"}, {"./../.agentos/../.agentos", "tools/l/journal.db"},
		{"../agentos.json", "tools/l"}, {"l", "tools/l"}, {"../tools/l", "tools/l/x"}, {"../data", "tools/l/x"}, {"/etc", "tools/l/passwd"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, target, p string) {
		if target == "" || strings.ContainsRune(target, 0) || len(target) > 256 || len(p) > 256 {
			t.Skip()
		}
		top := t.TempDir()
		dir := filepath.Join(top, "root")
		for name, content := range map[string]string{
			"root/.agentos/journal.db": "SECRET-STATE", "root/.git/config": "SECRET-GIT", "root/agentos.json": "SECRET-CONFIG",
			"root/tools/a.ts": "tool", "root/data/x": "data", "outside/secret": "SECRET-OUTSIDE",
		} {
			path := filepath.Join(top, filepath.FromSlash(name))
			os.MkdirAll(filepath.Dir(path), 0o755)
			os.WriteFile(path, []byte(content), 0o644)
		}
		if err := os.Symlink(target, filepath.Join(dir, "tools", "l")); err != nil {
			t.Skip()
		}
		j, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		if r, err := j.Resolve(p); err == nil {
			if r != "." && (filepath.Clean(r) != r || strings.HasPrefix(r, "/") || r == ".." || strings.HasPrefix(r, "../")) {
				t.Fatalf("Resolve(%q) with tools/l -> %q = %q: not clean or not inside", p, target, r)
			}
			for _, part := range strings.Split(r, "/") {
				if hidden[part] {
					t.Fatalf("Resolve(%q) with tools/l -> %q = %q reaches hidden state", p, target, r)
				}
			}
		}
		b, err := j.ReadFile(p)
		if err == nil && strings.HasPrefix(string(b), "SECRET") {
			if c, _ := Clean(p); !(c == ConfigFile && string(b) == "SECRET-CONFIG") {
				t.Fatalf("ReadFile(%q) with tools/l -> %q returned %q", p, target, b)
			}
		}
		s := NewSandbox(j, SandboxConfig{WriteDirs: []string{"tools"}, TempDir: t.TempDir()})
		defer s.Close()
		if b, err := s.ReadFile("/lib/" + strings.TrimPrefix(p, "tools/")); err == nil && strings.HasPrefix(string(b), "SECRET") {
			t.Fatalf("Sandbox read of %q with tools/l -> %q returned %q", p, target, b)
		}
		if err := s.WriteFile(p, []byte("pwned")); err == nil {
			for _, name := range []string{"root/.agentos/journal.db", "root/.git/config", "root/agentos.json", "outside/secret"} {
				if b, _ := os.ReadFile(filepath.Join(top, filepath.FromSlash(name))); string(b) == "pwned" {
					t.Fatalf("Sandbox write of %q with tools/l -> %q overwrote %s", p, target, name)
				}
			}
		}
	})
}

// ReadFileResolved calls its check exactly once, on where the path leads,
// before reading, whether the read takes the one-open fast path (no link on
// the way) or resolves first (a link): a refusal is returned instead of the
// content, and a hard-linked file is refused after the check, as ReadFile
// refuses it.
func TestReadFileResolvedChecksOnceWhereThePathLeads(t *testing.T) {
	j, _ := linkedRoot(t)
	for _, c := range []struct{ asked, resolved, content string }{
		{"tools/math/fib.ts", "tools/math/fib.ts", "fib"},
		{"./tools//math/fib.ts", "tools/math/fib.ts", "fib"},
		{"tools/alias.ts", "tools/math/fib.ts", "fib"},
		{"docs/fib.ts", "tools/math/fib.ts", "fib"},
	} {
		var seen []string
		b, r, err := j.ReadFileResolved(c.asked, func(r string) error { seen = append(seen, r); return nil })
		if err != nil || string(b) != c.content || r != c.resolved || len(seen) != 1 || seen[0] != c.resolved {
			t.Errorf("ReadFileResolved(%q) = %q, %q, %v (checked %q); want %q at %q, checked once there", c.asked, b, r, err, seen, c.content, c.resolved)
		}
		refusal := errors.New("no exec right")
		b, r, err = j.ReadFileResolved(c.asked, func(string) error { return refusal })
		if !errors.Is(err, refusal) || b != nil || r != c.resolved {
			t.Errorf("ReadFileResolved(%q) refused = %q, %q, %v; want no content, %q and the refusal", c.asked, b, r, err, c.resolved)
		}
	}
	checked := 0
	_, _, err := j.ReadFileResolved("tools/j.db", func(string) error { checked++; return nil })
	wantSecurity(t, "tools/j.db (hard link)", err)
	if checked != 1 {
		t.Errorf("the hard link's check ran %d times, want once", checked)
	}
	if _, _, err := j.ReadFileResolved("tools/state/journal.db", func(string) error { t.Error("checked a hidden path"); return nil }); !errors.Is(err, ErrSecurity) {
		t.Errorf("tools/state/journal.db: want ErrSecurity, got %v", err)
	}
	if b, _, err := j.ReadFileResolved("tools/none.ts", nil); err == nil || b != nil {
		t.Errorf("a missing file read %q, %v", b, err)
	}
}
