package repo

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// TestCheckoutStatSmudgedOnce: a fresh checkout's stat data not older than
// the first index written after it is racily clean (a same-size edit in
// that tick changes none of it): it is dropped then, and a later index
// write (Close's, in a later tick) MUST NOT give it back, or the edit made
// between the two writes would be trusted away at the next start.
func TestCheckoutStatSmudgedOnce(t *testing.T) {
	h := plumbing.ComputeHash(plumbing.BlobObject, []byte("aaaa"))
	r := &Repo{gitDir: t.TempDir(), files: map[string]entry{}, idx: map[string]index.Entry{}, pending: map[string]bool{}, checkoutStat: map[string]index.Entry{}}
	for p, mtime := range map[string]time.Time{"old.ts": time.Now().Add(-time.Hour), "racy.ts": time.Now().Add(time.Hour)} {
		r.files[p] = entry{hash: h, mode: filemode.Regular}
		r.idx[p] = index.Entry{Name: p, Hash: h, Mode: filemode.Regular}
		r.checkoutStat[p] = index.Entry{Name: p, Hash: h, Mode: filemode.Regular, Size: 4, ModifiedAt: mtime}
	}
	// The first index, written in the racy file's tick (its mtime is not
	// before the index's), then Close's, in a later tick.
	for range 2 {
		if err := r.writeIndex(); err != nil {
			t.Fatal(err)
		}
	}
	later := time.Now().Add(2 * time.Hour)
	if err := os.Chtimes(filepath.Join(r.gitDir, "index"), later, later); err != nil {
		t.Fatal(err)
	}
	r.loadIndex() // what the next start trusts
	if e := r.idx["old.ts"]; e.ModifiedAt.IsZero() {
		t.Error("the checkout's stat data older than the first index was not kept")
	}
	if e := r.idx["racy.ts"]; !e.ModifiedAt.IsZero() {
		t.Error("racily clean stat data of the checkout reached a later index and is trusted")
	}
}
