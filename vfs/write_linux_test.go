//go:build linux

package vfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteFastTakesOnlyPlainDirectories: the fast write takes a resolved
// path whose directory exists with no link on its way, and writes exactly
// the bytes; every other case (a missing directory, a link on the way, a
// directory or a file's child as the target, a closed jail) is declined
// with nothing left behind, for writeResolved's slow path. A link put
// where the file goes (a race after resolve) is replaced, never followed.
func TestWriteFastTakesOnlyPlainDirectories(t *testing.T) {
	j, dir := newJail(t)
	outside := filepath.Join(t.TempDir(), "secret")
	for _, d := range []string{"tools/deep", "real", "tools/deep/sub"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{"tools/deep/old.ts": "old", outside: "secret"} {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"tools/mid": "../real", "tools/deep/planted.ts": outside} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		r    string
		fast bool
	}{
		{"tools/deep/new.ts", true},
		{"tools/deep/old.ts", true}, // replaced whole
		{"top.txt", true},           // in the root itself
		{"tools/deep/planted.ts", true},
		{"tools/nodir/x.ts", false},
		{"tools/mid/x.ts", false},
		{"tools/deep/sub", false},
		{"tools/deep/old.ts/x", false},
	} {
		data := []byte("content of " + tc.r)
		if got := j.writeFast(tc.r, data); got != tc.fast {
			t.Errorf("writeFast(%q) = %v, want %v", tc.r, got, tc.fast)
		}
		b, err := os.ReadFile(filepath.Join(dir, tc.r))
		if tc.fast && (err != nil || string(b) != string(data)) {
			t.Errorf("%s holds %q, %v after the fast write", tc.r, b, err)
		}
		if !tc.fast && err == nil && string(b) == string(data) {
			t.Errorf("%s was written although the fast write declined it", tc.r)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "tools/deep/planted.ts")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the planted link is still there: %v, %v", fi, err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "secret" {
		t.Errorf("a write followed the planted link out of the root: the outside file holds %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "real", "x.ts")); err == nil {
		t.Error("the fast write followed a link on the way")
	}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".agentos-tmp") {
			t.Errorf("a temporary file is left: %s", p)
		}
		return nil
	})
	j.Close()
	if j.writeFast("tools/deep/after.ts", []byte("x")) {
		t.Error("writeFast wrote through a closed jail")
	}
}
