package vfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// countingRights grant read on paths under allow/ and count every Allow.
type countingRights struct{ allows *int }

func (r countingRights) Allow(a Access, p string) error {
	*r.allows++
	if r.Covers(a, p) {
		return nil
	}
	return fmt.Errorf("no %s right on %s", a, p)
}

func (r countingRights) Covers(a Access, p string) bool {
	return a == AccessRead && strings.HasPrefix(p, "allow/")
}

// TestReadFileMaxIsSizeThenReadFile checks ReadFileMax against what the fs
// device did before it (Size, refusing a file over the limit, then
// ReadFile): the same content, the same errors, and the same number of
// rights checks (a token's uses), for files allowed and not, small and too
// large, missing, hidden, directories, links out, /lib and /tmp.
func TestReadFileMaxIsSizeThenReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("allow/small.txt", "abc")
	write("allow/big.txt", "0123456789")
	write("deny/small.txt", "abc")
	write("deny/big.txt", "0123456789")
	write(".git/config", "x")
	os.MkdirAll(filepath.Join(dir, "allow/sub"), 0o755)
	os.Symlink("../deny/small.txt", filepath.Join(dir, "allow/link.txt"))
	os.Symlink("/etc/passwd", filepath.Join(dir, "allow/out.txt"))
	root, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	const max = 5
	paths := []string{"allow/small.txt", "allow/big.txt", "deny/small.txt", "deny/big.txt", "allow/missing.txt", "deny/missing.txt",
		".git/config", "allow/sub", "allow/link.txt", "allow/out.txt", "../x", "/etc/passwd", "/tmp/t.txt", "/tmp/big.txt", "/tmp/none.txt", "",
		"/lib/small.txt", "/lib/big.txt", "/lib/link.txt", "/lib/sub", "/lib", "/lib/../deny/small.txt", "/lib/.git/config", "/lib/missing.txt"}
	for _, rights := range []bool{false, true} {
		for _, p := range paths {
			old, neu := 0, 0
			cfg := func(n *int) SandboxConfig {
				c := SandboxConfig{TempDir: t.TempDir(), ToolsDir: "allow"}
				if rights {
					c.Rights = countingRights{n}
				}
				return c
			}
			a, b := NewSandbox(root, cfg(&old)), NewSandbox(root, cfg(&neu))
			for _, sb := range []*Sandbox{a, b} {
				sb.WriteFile("/tmp/t.txt", []byte("tmp"))
				sb.WriteFile("/tmp/big.txt", []byte("0123456789"))
			}
			old, neu = 0, 0
			// Before: Size, then ReadFile.
			var want []byte
			var werr error
			if size, err := a.Size(p); err == nil && size > max {
				werr = &TooLargeError{Path: p, Size: size, Max: max}
			} else {
				want, werr = a.ReadFile(p)
			}
			got, gerr := b.ReadFileMax(p, max)
			a.Close()
			b.Close()
			if string(got) != string(want) || fmt.Sprint(gerr) != fmt.Sprint(werr) || old != neu {
				t.Errorf("rights=%v %q: ReadFileMax %q, %v (%d checks); before %q, %v (%d checks)", rights, p, got, gerr, neu, want, werr, old)
			}
			var big *TooLargeError
			if errors.As(werr, &big) != errors.As(gerr, &big) {
				t.Errorf("rights=%v %q: the too-large verdicts differ", rights, p)
			}
		}
	}
}
