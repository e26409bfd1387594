//go:build linux

package repo_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// TestIndexStatRoundTrips: the change time and inode a later Hydrate
// compares survive the index's encoding, so that an unchanged file is not
// read again (were they lost, every file would read as changed: correct,
// and as slow as no index at all).
func TestIndexStatRoundTrips(t *testing.T) {
	up := newUpstream(t)
	plainCommit(t, up, "main", map[string]string{"tools/a.ts": "aaaa"}, "one tool")
	dir := t.TempDir()
	must(t, hydrate(t, dir, up, slowRegenerate).Close())
	b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	must(t, err)
	var idx index.Index
	must(t, index.NewDecoder(bufio.NewReader(bytes.NewReader(b))).Decode(&idx))
	e, err := idx.Entry("tools/a.ts")
	must(t, err)
	fi, err := os.Lstat(filepath.Join(dir, "tools", "a.ts"))
	must(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	if ctime := time.Unix(st.Ctim.Sec, st.Ctim.Nsec); !e.CreatedAt.Equal(ctime) || e.Inode != uint32(st.Ino) {
		t.Fatalf("the index keeps ctime %v inode %d, the file has %v %d", e.CreatedAt, e.Inode, ctime, st.Ino)
	}
}
