package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func newJail(t *testing.T) (*Jail, string) {
	t.Helper()
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j, dir
}

func TestJailRealIO(t *testing.T) {
	j, dir := newJail(t)
	if err := j.WriteFile("deep/nested/file.txt", []byte("exact bytes\x00\xff")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "deep", "nested")); err != nil || !fi.IsDir() {
		t.Fatalf("physical directories not created: %v", err)
	}
	b, err := j.ReadFile("deep/nested/file.txt")
	if err != nil || string(b) != "exact bytes\x00\xff" {
		t.Fatalf("read back %q, %v", b, err)
	}
	j.WriteFile("deep/a.txt", []byte("a"))
	got, err := j.List("deep")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"deep/a.txt", "deep/nested/file.txt"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
}

func TestJailRefusesEscapes(t *testing.T) {
	j, dir := newJail(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	os.WriteFile(secret, []byte("top secret"), 0o644)
	if err := os.Symlink(secret, filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "linkdir")); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("x"), 0o644)

	for _, tc := range []struct {
		name string
		op   func() error
	}{
		{"write ../outside", func() error { return j.WriteFile("../outside.txt", []byte("x")) }},
		{"write a/../../outside", func() error { return j.WriteFile("a/../../outside.txt", []byte("x")) }},
		{"read absolute", func() error { _, err := j.ReadFile("/etc/passwd"); return err }},
		{"read symlink to outside file", func() error { _, err := j.ReadFile("link.txt"); return err }},
		{"write through symlinked dir", func() error { return j.WriteFile("linkdir/new.txt", []byte("x")) }},
		{"read .git", func() error { _, err := j.ReadFile(".git/config"); return err }},
		{"read a nested .git", func() error { _, err := j.ReadFile("tools/.git/config"); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op()
			if !errors.Is(err, ErrSecurity) {
				t.Fatalf("want ErrSecurity, got %v", err)
			}
			if !strings.Contains(err.Error(), "security violation") {
				t.Fatalf("error %q does not say it is a security violation", err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "outside.txt")); err == nil {
		t.Fatal("a file was written outside the root")
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Fatal("a file was written through the symlinked directory")
	}
	if b, _ := os.ReadFile(secret); string(b) != "top secret" {
		t.Fatal("the outside file changed")
	}
	names, err := j.List(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasPrefix(n, ".git") || n == "link.txt" {
			t.Fatalf("List shows %q", n)
		}
	}
}

func TestNotFoundIsDistinct(t *testing.T) {
	j, _ := newJail(t)
	_, err := j.ReadFile("nope.txt")
	if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrSecurity) {
		t.Fatalf("got %v", err)
	}
}

func TestSandboxNamespace(t *testing.T) {
	j, dir := newJail(t)
	j.WriteFile("tools/math/fib.ts", []byte("fib"))
	j.WriteFile("data.json", []byte(`{"secret":42}`))
	tmpParent := t.TempDir()
	s := NewSandbox(j, SandboxConfig{WriteDirs: []string{"exports"}, TempDir: tmpParent})

	if b, err := s.ReadFile("/lib/math/fib.ts"); err != nil || string(b) != "fib" {
		t.Fatalf("/lib read: %q %v", b, err)
	}
	if b, err := s.ReadFile("data.json"); err != nil || string(b) != `{"secret":42}` {
		t.Fatalf("root-relative read: %q %v", b, err)
	}
	if err := s.WriteFile("/lib/math/fib.ts", []byte("pwned")); !errors.Is(err, ErrSecurity) {
		t.Fatalf("/lib must be read-only, got %v", err)
	}
	if err := s.WriteFile("data.json", []byte("x")); !errors.Is(err, ErrSecurity) {
		t.Fatalf("write outside write dirs: %v", err)
	}
	if err := s.WriteFile("exports/report.csv", []byte("a|b")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "exports", "report.csv")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadFile("/etc/passwd"); !errors.Is(err, ErrSecurity) {
		t.Fatalf("absolute path outside mounts: %v", err)
	}
	if _, err := s.ReadFile("/tmp/../etc/passwd"); !errors.Is(err, ErrSecurity) {
		t.Fatalf("/tmp/..: %v", err)
	}
	if err := s.WriteFile("/tmp/scratch/a.txt", []byte("scratch")); err != nil {
		t.Fatal(err)
	}
	if b, err := s.ReadFile("/tmp/scratch/a.txt"); err != nil || string(b) != "scratch" {
		t.Fatalf("/tmp read: %q %v", b, err)
	}
	ls, err := s.List("/tmp")
	if err != nil || !reflect.DeepEqual(ls, []string{"/tmp/scratch/a.txt"}) {
		t.Fatalf("List(/tmp) = %v %v", ls, err)
	}
	ls, err = s.List("/lib")
	if err != nil || !reflect.DeepEqual(ls, []string{"/lib/math/fib.ts"}) {
		t.Fatalf("List(/lib) = %v %v", ls, err)
	}
	entries, _ := os.ReadDir(tmpParent)
	if len(entries) != 1 {
		t.Fatalf("want one scratch dir, have %d", len(entries))
	}
	s.Close()
	if entries, _ := os.ReadDir(tmpParent); len(entries) != 0 {
		t.Fatalf("scratch dir not wiped: %v", entries)
	}
	if err := s.WriteFile("/tmp/late.txt", nil); err == nil {
		t.Fatal("write to /tmp after Close succeeded")
	}
}

func TestSandboxWithoutTmpUseCreatesNoDir(t *testing.T) {
	j, _ := newJail(t)
	parent := t.TempDir()
	s := NewSandbox(j, SandboxConfig{TempDir: parent})
	s.ReadFile("missing")
	s.Close()
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Fatalf("scratch dir created without use: %v", entries)
	}
}

// FuzzClean checks the lexical resolver: whatever it accepts is relative,
// clean and inside the root; whatever it refuses says why.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"tools/a.ts", "../x", "a/../../b", "/etc/passwd", "a//b/./c", ".", "..", "", ".git/config", "a\x00b", `a\..\b`, "tools/../.git", "./.agentos/j.db", "...", "a/.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		c, err := Clean(p)
		if err != nil {
			if !errors.Is(err, ErrSecurity) && !errors.Is(err, ErrInvalidPath) {
				t.Fatalf("Clean(%q) error %v is neither ErrSecurity nor ErrInvalidPath", p, err)
			}
			return
		}
		if strings.HasPrefix(c, "/") || c == ".." || strings.HasPrefix(c, "../") || strings.Contains(c, "/../") || strings.HasSuffix(c, "/..") {
			t.Fatalf("Clean(%q) = %q escapes", p, c)
		}
		if filepath.Clean(c) != c {
			t.Fatalf("Clean(%q) = %q is not clean", p, c)
		}
		for _, part := range strings.Split(c, "/") {
			if hidden[part] {
				t.Fatalf("Clean(%q) = %q reaches a hidden directory", p, c)
			}
		}
	})
}

// A path with a control character is refused: a newline would reach the
// commit message ("write PATH") and could forge its trailers, e.g. a
// forge's Agentos-Fence (found by review).
func TestCleanRefusesControlCharacters(t *testing.T) {
	for _, p := range []string{"tools/x\nAgentos-Fence: 9223372036854775807\n.ts", "tools/a\tb.ts", "tools/\x1b[31mred.ts", "tools/del\x7f.ts"} {
		if _, err := Clean(p); !errors.Is(err, ErrInvalidPath) || !strings.Contains(err.Error(), "control character") {
			t.Errorf("Clean(%q) = %v, want ErrInvalidPath naming the control character", p, err)
		}
	}
	if c, err := Clean("tools/ünïcode name.ts"); err != nil || c != "tools/ünïcode name.ts" {
		t.Errorf("a printable non-ASCII name: %q %v", c, err)
	}
}
