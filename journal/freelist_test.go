package journal

import (
	"os"
	"path/filepath"
	"testing"
)

// synced is syncedFreelist, failing t on an error.
func synced(t *testing.T, path string) bool {
	t.Helper()
	ok, err := syncedFreelist(path)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestCloseWritesTheFreePageList: the journal's commits leave bbolt's
// free-page list out (NoFreelistSync), so that an open for writing after
// them walks the whole file; a clean Close writes the list once, and the
// next open reads it. After a crash (the file closed with no last commit)
// the next open walks the file, loses nothing, and its clean Close writes
// the list again.
func TestCloseWritesTheFreePageList(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	record := func(j *Journal, n int) {
		for range n {
			run, err := j.Begin(RunMeta{Kind: "exec", Tool: "tools/a.ts"})
			if err != nil {
				t.Fatal(err)
			}
			if err := run.End(StatusOK, []byte(`1`), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	j, err := Open(path, Options{Durability: NoSync})
	if err != nil {
		t.Fatal(err)
	}
	record(j, 20)
	if err := j.submit(&write{flush: true}, true); err != nil { // committed
		t.Fatal(err)
	}
	if synced(t, path) {
		t.Fatal("a commit wrote the free-page list: every commit would pay for it")
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if !synced(t, path) {
		t.Fatal("Close did not write the free-page list: the next open walks the whole file")
	}

	// A crash: the writer stops and the file is closed with no last commit.
	j, err = Open(path, Options{Durability: NoSync})
	if err != nil {
		t.Fatal(err)
	}
	record(j, 5)
	if err := j.submit(&write{flush: true}, true); err != nil { // committed
		t.Fatal(err)
	}
	if err := j.st.(*boltStore).db.Close(); err != nil {
		t.Fatal(err)
	}
	_ = j.Close() // its writer stops; its last commit finds the file closed
	if synced(t, path) {
		t.Fatal("the free-page list survived a commit after it")
	}
	j, err = Open(path, Options{Durability: NoSync})
	if err != nil {
		t.Fatal(err)
	}
	runs, err := j.Runs()
	if err != nil || len(runs) != 25 {
		t.Fatalf("after the crash: %d runs, %v; want 25", len(runs), err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if !synced(t, path) {
		t.Fatal("Close after a crash did not write the free-page list")
	}

	// A read-only open writes nothing, and leaves the list as it found it.
	before, _ := os.ReadFile(path)
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("a read-only open and close changed the file")
	}
}
