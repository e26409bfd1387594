//go:build linux

package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestFastReadIsReadResolved: the fast read takes regular files (and
// nothing else), and its answer, refusal or error is the slow path's, word
// for word, with the check called once and in the same place.
func TestFastReadIsReadResolved(t *testing.T) {
	j, dir := newJail(t)
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "0123456789abcdef")
	write("empty.txt", "")
	write("d/big.txt", string(make([]byte, 70000)))
	huge := make([]byte, 3<<20+7) // past readFD's first buffer (1 MiB): it grows twice
	for i := range huge {
		huge[i] = byte(i % 251)
	}
	write("d/huge.txt", string(huge))
	write("twin.txt", "twin")
	if err := os.Link(filepath.Join(dir, "twin.txt"), filepath.Join(dir, "twin2.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	refuse := errors.New("refused by the check")
	for _, tc := range []struct {
		r    string
		max  int64
		deny bool
		fast bool // the fast read takes it
	}{
		{"a.txt", 0, false, true},
		{"a.txt", 16, false, true},
		{"a.txt", 15, false, true},
		{"a.txt", 0, true, true},
		{"empty.txt", 0, false, true},
		{"d/big.txt", 0, false, true},
		{"d/big.txt", 1000, true, true}, // too large comes before the check
		{"d/huge.txt", 0, false, true},
		{"twin.txt", 0, false, true},
		{"twin.txt", 0, true, true},
		{"missing.txt", 0, false, false},
		{"missing.txt", 0, true, false},
		{"d", 0, false, false},
		{"link.txt", 0, false, false}, // a link now is a race: the slow path
	} {
		run := func(fast bool) (b []byte, err error, checks int, took bool) {
			check := func() error {
				checks++
				if tc.deny {
					return refuse
				}
				return nil
			}
			if fast {
				b, took, err = j.fastRead(tc.r, tc.r, tc.max, check)
				if !took {
					if checks != 0 {
						t.Errorf("%+v: the fast read called the check, then left it to the slow path", tc)
					}
					b, err = j.readResolved(tc.r, tc.r, tc.max, check)
				}
				return b, err, checks, took
			}
			j.fdMu.Lock()
			fd := j.rootFD
			j.rootFD = -1 // the slow path alone
			j.fdMu.Unlock()
			defer func() { j.fdMu.Lock(); j.rootFD = fd; j.fdMu.Unlock() }()
			b, err = j.readResolved(tc.r, tc.r, tc.max, check)
			return b, err, checks, false
		}
		fb, ferr, fchecks, took := run(true)
		sb, serr, schecks, _ := run(false)
		if took != tc.fast {
			t.Errorf("%+v: the fast read took it: %v", tc, took)
		}
		if !reflect.DeepEqual(fb, sb) || fchecks != schecks || (ferr == nil) != (serr == nil) || ferr != nil && ferr.Error() != serr.Error() {
			t.Errorf("%+v: fast read %q, %v (%d checks); slow %q, %v (%d checks)", tc, fb, ferr, fchecks, sb, serr, schecks)
		}
	}
}

// TestResolveFastIsResolve: the fast resolve takes only a path that
// exists, or whose last name alone is missing, with no link and no hidden
// component on its way, where it answers what the walk answers; every
// other path (a link anywhere, the last component included, a dangling
// one too, a missing directory, a hidden directory) is left to the walk.
func TestResolveFastIsResolve(t *testing.T) {
	j, dir := newJail(t)
	for _, d := range []string{"tools/deep", ".git", "real"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"tools/deep/a.ts", ".git/config", "real/b.ts"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"tools/last.ts": "deep/a.ts", "tools/mid": "../real", "tools/git": "../.git", "tools/dangling.ts": "nowhere.ts"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		c    string
		fast bool
	}{
		{"tools/deep/a.ts", true},
		{"tools/deep", true},
		{"tools", true},
		{"tools/last.ts", false},    // the last component is a link
		{"tools/mid/b.ts", false},   // a link on the way
		{"tools/git/config", false}, // a link to a hidden directory
		{".git/config", false},      // hidden
		{"tools/deep/new.ts", true}, // about to be written: its directory resolves
		{"tools/new.ts", true},
		{"new.ts", true},
		{"tools/nodir/new.ts", false},  // its directory is missing
		{"tools/mid/new.ts", false},    // a link on the way to a missing file
		{"tools/dangling.ts", false},   // a link to nothing
		{"tools/last.ts/new", false},   // under a link
		{"tools/deep/a.ts/new", false}, // under a file
		{".git/new", false},            // hidden
		{".", false},
	} {
		r, ok := j.resolveFast(tc.c)
		if ok != tc.fast || (ok && r != tc.c) {
			t.Errorf("resolveFast(%q) = %q, %v; want fast %v", tc.c, r, ok, tc.fast)
		}
		if !ok {
			continue
		}
		// What the walk answers for it, without the fast path.
		if walked, err := j.walk("resolve", tc.c, tc.c); err != nil || walked != r {
			t.Errorf("the walk of %q answers %q, %v; the fast path %q", tc.c, walked, err, r)
		}
	}
}
