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
