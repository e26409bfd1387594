package repo_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/index"

	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/vfs"
)

// The stat cache of .git/index (issue 28, goal 4: a later boot that grows
// with what changed): a later Hydrate reads only the working files whose
// stat data differ from the index's, and still finds every change made by
// hand while no agentos ran.

// statRoot returns a tool root checked out from an upstream of three
// tools, whose .git/index trusts every file (their stat data recorded
// long after they were last modified), with the Repo closed.
func statRoot(t *testing.T) (dir, up string, old time.Time) {
	return statRootWith(t, nil)
}

// statRootWith is statRoot with more files in the upstream's commit.
func statRootWith(t *testing.T, more map[string]string) (dir, up string, old time.Time) {
	t.Helper()
	up = newUpstream(t)
	files := map[string]string{"tools/a.ts": "aaaa", "tools/b.ts": "bbbb", "tools/c.ts": "cccc"}
	maps.Copy(files, more)
	plainCommit(t, up, "main", files, "three tools")
	dir = t.TempDir()
	must(t, hydrate(t, dir, up).Close())
	old = time.Now().Add(-time.Hour).Truncate(time.Second)
	for _, p := range []string{"tools/a.ts", "tools/b.ts", "tools/c.ts"} {
		must(t, os.Chtimes(filepath.Join(dir, filepath.FromSlash(p)), old, old))
	}
	// This Hydrate reads the aged files (their ctime changed) and records
	// their stat data: they were modified long ago.
	must(t, hydrate(t, dir, up).Close())
	return dir, up, old
}

// handChanges makes, while no Repo is open, the changes a later Hydrate
// MUST find: a same-size rewrite of tools/a.ts with its mtime put back
// (an agentos write of it recorded first, so that finding it recovers it
// upstream), a deleted tools/b.ts, a new tools/n.ts.
func handChanges(t *testing.T, dir, up string, old time.Time) {
	t.Helper()
	r := hydrate(t, dir, up)
	must(t, r.Intend("tools/a.ts", []byte("AAAA")))
	must(t, r.Close())
	writeFile(t, dir, "tools/a.ts", "AAAA")
	must(t, os.Chtimes(filepath.Join(dir, "tools", "a.ts"), old, old))
	must(t, os.Remove(filepath.Join(dir, "tools", "b.ts")))
	writeFile(t, dir, "tools/n.ts", "new")
}

// checkFound checks that the Hydrate after handChanges found them all.
func checkFound(t *testing.T, dir, up string, logs string) {
	t.Helper()
	files := upstreamFiles(t, up, "main")
	if files["tools/a.ts"] != "AAAA" {
		t.Errorf("the same-size rewrite of tools/a.ts with its mtime put back was not found (upstream holds %q, want the recovered AAAA)", files["tools/a.ts"])
	}
	if got := readFile(t, dir, "tools/b.ts"); got != "bbbb" {
		t.Errorf("the deleted tracked tools/b.ts was not restored: %q", got)
	}
	if !strings.Contains(logs, "path=tools/n.ts") {
		t.Errorf("the new tools/n.ts was not found as a local change:\n%s", logs)
	}
	if _, ok := files["tools/n.ts"]; ok {
		t.Error("the new tools/n.ts was committed, though no agentos write of it was under way")
	}
}

// TestLaterBootFindsHandChanges: the index's stat cache never hides a
// change made by hand: a same-size rewrite with its mtime restored (its
// change time and inode differ), a deleted file, a new file.
func TestLaterBootFindsHandChanges(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the change time is compared where the platform gives it (linux)")
	}
	dir, up, old := statRoot(t)
	handChanges(t, dir, up, old)
	var logs syncBuffer
	hydrate(t, dir, up, func(o *repo.Options) { o.Logger = newLogger(&logs) })
	checkFound(t, dir, up, logs.String())
}

// TestLaterBootFindsHandChangesInALargeTree: the same in a tree large
// enough for the scan to lstat its files on several goroutines first
// (preloadStat, on a machine with more than one core).
func TestLaterBootFindsHandChangesInALargeTree(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the change time is compared where the platform gives it (linux)")
	}
	more := map[string]string{}
	for i := range 1200 {
		more[fmt.Sprintf("tools/g%d/f%04d.ts", i%12, i)] = fmt.Sprint(i)
	}
	dir, up, old := statRootWith(t, more)
	handChanges(t, dir, up, old)
	preloaded := 0
	repo.SetPreloadHook(func(n int) { preloaded = n })
	defer repo.SetPreloadHook(nil)
	var logs syncBuffer
	hydrate(t, dir, up, func(o *repo.Options) { o.Logger = newLogger(&logs) })
	checkFound(t, dir, up, logs.String())
	if runtime.GOMAXPROCS(0) > 1 && preloaded < 1200 {
		t.Errorf("the scan preloaded %d files' stat on %d cores, want the 1,203 tracked", preloaded, runtime.GOMAXPROCS(0))
	}
}

// TestDamagedIndexScansEverything: a damaged .git/index trusts nothing:
// the later Hydrate reads every working file and finds the same changes.
func TestDamagedIndexScansEverything(t *testing.T) {
	dir, up, old := statRoot(t)
	handChanges(t, dir, up, old)
	ix := filepath.Join(dir, ".git", "index")
	b, err := os.ReadFile(ix)
	must(t, err)
	must(t, os.WriteFile(ix, append(b[:len(b)/2:len(b)/2], "damaged"...), 0o644))
	var logs syncBuffer
	hydrate(t, dir, up, func(o *repo.Options) { o.Logger = newLogger(&logs) })
	checkFound(t, dir, up, logs.String())
}

// TestFreshCheckoutIndexKeepsStat: the index a fresh checkout leaves
// carries the stat data of the files it wrote (as git's checkout does),
// so that the next Hydrate does not read all of them again. Before, every
// file written within 2 s of the index was left without, and the first
// later boot at 10,000 tools read and hashed all 10,000.
func TestFreshCheckoutIndexKeepsStat(t *testing.T) {
	up := newUpstream(t)
	plainCommit(t, up, "main", map[string]string{"tools/a.ts": "aaaa", "tools/b.ts": "bbbb"}, "two tools")
	dir := t.TempDir()
	must(t, hydrate(t, dir, up, slowRegenerate).Close())
	f, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	must(t, err)
	var idx index.Index
	must(t, index.NewDecoder(bufio.NewReader(bytes.NewReader(f))).Decode(&idx))
	for _, p := range []string{"tools/a.ts", "tools/b.ts"} {
		e, err := idx.Entry(p)
		if err != nil {
			t.Fatalf("%s is not in the index: %v", p, err)
		}
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
		must(t, err)
		if e.ModifiedAt.IsZero() || !e.ModifiedAt.Equal(fi.ModTime()) || int64(e.Size) != fi.Size() {
			t.Errorf("%s: the index keeps no stat data of the checkout's write (mtime %v size %d; the file's %v %d)", p, e.ModifiedAt, e.Size, fi.ModTime(), fi.Size())
		}
	}
}

// slowRegenerate makes the index a checkout writes at the end of its sync
// fall in a later tick of the file system's clock than the files it wrote
// (as at 10,000 tools): written in the same tick, they are racily clean
// and the index rightly keeps no stat data for them.
func slowRegenerate(o *repo.Options) {
	o.Regenerate = func() error {
		time.Sleep(50 * time.Millisecond)
		return nil
	}
}

// TestFreshCheckoutReportsWrites (issue 28 goal 4): the first checkout of
// a fresh tool root calls CheckedOut with each file it writes, its exact
// content and its stat as written (so that the registry need not read the
// 10,000 files again); a later update does not call it.
func TestFreshCheckoutReportsWrites(t *testing.T) {
	up := newUpstream(t)
	files := map[string]string{"tools/a.ts": "aaaa", "tools/sub/b.ts": "bbbbbb", "README.md": "r"}
	plainCommit(t, up, "main", files, "three files")
	dir := t.TempDir()
	got := map[string]string{}
	report := func(o *repo.Options) {
		o.CheckedOut = func(p string, content []byte, fi fs.FileInfo) {
			disk, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
			if err != nil || !os.SameFile(disk, fi) || disk.Size() != fi.Size() || !disk.ModTime().Equal(fi.ModTime()) {
				t.Errorf("%s: CheckedOut's stat %v is not the written file's (%v, %v)", p, fi, disk, err)
			}
			got[p] = string(content)
		}
	}
	must(t, hydrate(t, dir, up, report).Close())
	if !maps.Equal(got, files) {
		t.Fatalf("the fresh checkout reported %v, want every file it wrote with its content %v", got, files)
	}
	plainCommit(t, up, "main", map[string]string{"tools/c.ts": "cc"}, "one more")
	clear(got)
	must(t, hydrate(t, dir, up, report).Close())
	if len(got) != 0 {
		t.Errorf("a later update reported %v: CheckedOut is the fresh checkout's only", got)
	}
}

// TestWalkedIsTheTreeAfterTheUpdate (issue 28 goal 4): what a later
// Hydrate gives Options.Walked, once, is what an lstat of every working
// file gives once the update is done: the files the update wrote (a new
// and a changed tool, a deleted one restored) with their new stat, the
// files it left alone, an untracked file and a symbolic link, nothing it
// removed, and the ignored directory among the skipped paths.
func TestWalkedIsTheTreeAfterTheUpdate(t *testing.T) {
	dir, up, _ := statRoot(t)
	plainCommit(t, up, "main", map[string]string{"tools/d.ts": "dddd", "tools/c.ts": "CCCCC"}, "upstream changes")
	must(t, os.Remove(filepath.Join(dir, "tools", "b.ts")))
	writeFile(t, dir, "tools/n.ts", "new")
	writeFile(t, dir, "tools/.forge/x.ts", "staged")
	must(t, os.Symlink("a.ts", filepath.Join(dir, "tools", "l.ts")))
	var got map[string]fs.FileInfo
	var skipped []string
	calls := 0
	hydrate(t, dir, up, func(o *repo.Options) {
		o.Ignore = []string{"tools/.forge/"}
		o.Walked = func(f map[string]fs.FileInfo, s []string) { calls++; got, skipped = f, s }
	})
	if calls != 1 {
		t.Fatalf("Walked called %d times, want once", calls)
	}
	want := map[string]fs.FileInfo{}
	must(t, filepath.WalkDir(dir, func(a string, d fs.DirEntry, err error) error {
		must(t, err)
		rel, _ := filepath.Rel(dir, a)
		p := filepath.ToSlash(rel)
		switch {
		case d.IsDir() && (p == ".git" || p == ".agentos" || p == "tools/.forge"):
			return filepath.SkipDir
		case d.IsDir():
			return nil
		}
		fi, err := os.Lstat(a)
		must(t, err)
		want[p] = fi
		return nil
	}))
	if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
		t.Fatalf("Walked gave %v\nthe working tree holds %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	for p, w := range want {
		g := got[p]
		gi, _ := vfs.InodeCtime(g)
		wi, _ := vfs.InodeCtime(w)
		if g.Size() != w.Size() || !g.ModTime().Equal(w.ModTime()) || g.Mode() != w.Mode() || gi != wi {
			t.Errorf("%s: Walked gave size %d mtime %v mode %v inode %d; the file has %d %v %v %d", p, g.Size(), g.ModTime(), g.Mode(), gi, w.Size(), w.ModTime(), w.Mode(), wi)
		}
	}
	if !slices.Contains(skipped, "tools/.forge/") {
		t.Errorf("skipped %v, want the ignored tools/.forge/ among them", skipped)
	}
	for _, p := range []string{"tools/b.ts", "tools/c.ts", "tools/d.ts"} {
		if _, ok := got[p]; !ok {
			t.Errorf("%s, written by the update, is not in what Walked gave", p)
		}
	}
}
