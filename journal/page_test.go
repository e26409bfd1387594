package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agentos-run/agentos/driver"
)

// tiedClock is an Options.Now whose readings come in threes at the same
// instant: runs that start together, which a listing must still order and
// page without skipping or repeating one.
type tiedClock struct {
	mu sync.Mutex
	t  time.Time
	n  int
}

func (c *tiedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n%3 == 0 {
		c.t = c.t.Add(time.Millisecond)
	}
	c.n++
	return c.t
}

// recordRuns records n runs, run i with i%4 calls, every fifth left running.
func recordRuns(t testing.TB, j *Journal, n int) {
	t.Helper()
	for i := range n {
		run := mustBegin(t, j, RunMeta{Kind: "exec", Tool: fmt.Sprintf("tools/t%d.ts", i%7)})
		h := run.Middleware()(echoDevices().host())
		for s := range i % 4 {
			if _, err := h.Do(context.Background(), call(uint64(s+1), "clock", "now", "")); err != nil {
				t.Fatal(err)
			}
		}
		if i%5 == 4 {
			continue // still running: its count is not stored
		}
		if err := run.End(StatusOK, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// newestFirst is Runs in the listing's order: start, then id, descending.
func newestFirst(t testing.TB, j *Journal) []RunMeta {
	t.Helper()
	all, err := j.Runs()
	if err != nil {
		t.Fatal(err)
	}
	sort.SliceStable(all, func(a, b int) bool {
		if !all[a].Started.Equal(all[b].Started) {
			return all[a].Started.After(all[b].Started)
		}
		return all[a].ID > all[b].ID
	})
	return all
}

// pageAll lists every run with pages of size limit, each page's cursor the
// previous page's last run, as 'agentos runs --before' (--after, oldest
// first) does.
func pageAll(t testing.TB, j *Journal, limit int, oldest ...bool) []RunMeta {
	t.Helper()
	var out []RunMeta
	from := ""
	for range 1000 {
		var page []RunMeta
		q := RunQuery{Before: from, Limit: limit}
		if len(oldest) > 0 && oldest[0] {
			q = RunQuery{Oldest: true, After: from, Limit: limit}
		}
		if err := j.EachRun(q, func(m RunMeta) error {
			page = append(page, m)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if len(page) < limit {
			return out
		}
		from = page[len(page)-1].ID
	}
	t.Fatal("the pages never ended")
	return nil
}

// checkListing says whether got lists exactly want's runs, in want's order,
// each with the calls it recorded.
func checkListing(t *testing.T, j *Journal, got, want []RunMeta) {
	t.Helper()
	ids := func(rs []RunMeta) []string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = r.ID
		}
		return out
	}
	if !slices.Equal(ids(got), ids(want)) {
		t.Fatalf("listed\n%v\nwant (every run once, newest first)\n%v", ids(got), ids(want))
	}
	for _, r := range got {
		n, err := j.Count(r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Calls != n {
			t.Errorf("run %s (%s) listed with %d calls; it recorded %d", r.ID, r.Status, r.Calls, n)
		}
	}
}

// TestEachRunPages: a listing in pages of any size lists every run once,
// newest first, runs that started at the same instant included, each with
// its count; a cursor that names no run is refused.
func TestEachRunPages(t *testing.T) {
	both(t, func(t *testing.T) {
		clk := &tiedClock{t: time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)}
		j, _ := openTemp(t, Options{Now: clk.Now})
		recordRuns(t, j, 23)
		want := newestFirst(t, j)
		oldestFirst := slices.Clone(want)
		slices.Reverse(oldestFirst)
		for _, limit := range []int{1, 2, 3, 5, 22, 23, 24} {
			t.Run(fmt.Sprint("limit=", limit), func(t *testing.T) {
				checkListing(t, j, pageAll(t, j, limit), want)
				checkListing(t, j, pageAll(t, j, limit, true), oldestFirst)
			})
		}
		var all []RunMeta
		if err := j.EachRun(RunQuery{}, func(m RunMeta) error { all = append(all, m); return nil }); err != nil {
			t.Fatal(err)
		}
		checkListing(t, j, all, want)

		stop := errors.New("stop")
		seen := 0
		if err := j.EachRun(RunQuery{}, func(RunMeta) error { seen++; return stop }); !errors.Is(err, stop) || seen != 1 {
			t.Errorf("fn's error: EachRun = %v after %d runs; want it back after 1", err, seen)
		}
		if err := j.EachRun(RunQuery{Before: "nosuchrun"}, func(RunMeta) error { return nil }); !errors.Is(err, ErrNoRun) {
			t.Errorf("Before of no run: %v, want ErrNoRun", err)
		}
		for _, q := range []RunQuery{{Limit: -1}, {Before: want[0].ID, Oldest: true}, {After: want[0].ID}, {Oldest: true, Before: want[0].ID, After: want[1].ID}} {
			if err := j.EachRun(q, func(RunMeta) error { return nil }); err == nil {
				t.Errorf("EachRun(%+v) was accepted", q)
			}
		}
	})
}

// TestEachRunAfterPruneAndImport: the index follows the runs: a pruned run
// is not listed, a run imported over another with its id is listed once,
// at its own start, with its own count.
func TestEachRunAfterPruneAndImport(t *testing.T) {
	both(t, func(t *testing.T) {
		clk := newClock()
		j, _ := openTemp(t, Options{Now: clk.Now})
		recordRuns(t, j, 9)
		if _, err := j.Prune(PruneOptions{KeepRuns: 3}); err != nil {
			t.Fatal(err)
		}
		want := newestFirst(t, j)
		checkListing(t, j, pageAll(t, j, 2), want)

		// Import a run over the oldest one, with a newer start and 2 calls.
		d, err := j.Export(want[len(want)-1].ID)
		if err != nil {
			t.Fatal(err)
		}
		d.Run.Started = clk.Now().Add(time.Hour)
		d.Run.Status = StatusOK
		d.Entries = []Entry{{Seq: 1, Driver: "clock", Op: "now"}, {Seq: 2, Driver: "clock", Op: "now"}}
		if err := j.Import(d); err != nil {
			t.Fatal(err)
		}
		got := pageAll(t, j, 2)
		checkListing(t, j, got, newestFirst(t, j))
		if got[0].ID != d.Run.ID || got[0].Calls != 2 {
			t.Errorf("the imported run is listed as %s with %d calls; want it first (newest), with 2", got[0].ID, got[0].Calls)
		}
	})
}

// TestEndStoresCount: a run's end keeps its call count in the run index,
// so that a listing reads it instead of counting the run's entries.
func TestEndStoresCount(t *testing.T) {
	j, path := openTemp(t, Options{})
	recordRuns(t, j, 8)
	runs := newestFirst(t, j)
	j.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		idx := tx.Bucket(bucketStarted)
		for _, r := range runs {
			n, known := storedCount(idx.Get(startedKey(r.Started, r.ID)))
			switch {
			case r.Status == StatusRunning && known:
				t.Errorf("running run %s has a stored count (%d): it still grows", r.ID, n)
			case r.Status != StatusRunning && !known:
				t.Errorf("ended run %s has no stored count", r.ID)
			case known:
				if want := countEntries(tx, r.ID); n != want {
					t.Errorf("run %s: stored count %d, it recorded %d", r.ID, n, want)
				}
			}
		}
		return nil
	})
}

// TestEachRunOldJournal: a journal written before the run index (storage
// format 2: no index, no stored counts) is indexed when opened, and lists
// every run with its count, counted when listed.
func TestEachRunOldJournal(t *testing.T) {
	clk := &tiedClock{t: time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)}
	j, path := openTemp(t, Options{Now: clk.Now})
	recordRuns(t, j, 17)
	want := newestFirst(t, j)
	j.Close()
	// Make it a format-2 file: what an older agentos wrote.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketStarted); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keyFormat, []byte("2"))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	j = openAt(t, path, Options{Now: clk.Now})
	checkListing(t, j, pageAll(t, j, 4), want)
	// A run recorded after the migration is indexed like any other.
	recordRuns(t, j, 2)
	checkListing(t, j, pageAll(t, j, 4), newestFirst(t, j))
	j.Close()
	db, err = bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		if v := string(tx.Bucket(bucketMeta).Get(keyFormat)); v != fmt.Sprint(storageFormat) {
			t.Errorf("format after the migration: %s, want %d", v, storageFormat)
		}
		return nil
	})
}

// BenchmarkRunsFirstPage is 'agentos runs' over a journal of 100,000 runs
// (3 calls each on average, every tenth run still running): the first page of 50, newest first, with its
// counts, the journal opened read-only as the CLI opens it. The journal
// is built once per machine (cached in the temp
// directory under filepath.Join(os.TempDir(), "agentos-bench-runs-100k"),
// a minute or two) and opened by each round, as the CLI opens it.
//
//	go test -run '^$' -bench RunsFirstPage -benchtime 20x ./journal/
func BenchmarkRunsFirstPage(b *testing.B) {
	path := cachedJournal(b, 100_000)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		j, err := Open(path, Options{ReadOnly: true}) // as 'agentos runs' opens it
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		if err := j.EachRun(RunQuery{Limit: 50}, func(m RunMeta) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		j.Close()
		if n != 50 {
			b.Fatalf("listed %d runs, want 50", n)
		}
	}
}

// BenchmarkRunsAllCounted is the listing 'agentos runs' made before the
// run index, over the same journal: every run's metadata (Runs), then each
// run's count read apart (Count).
//
//	go test -run '^$' -bench RunsAllCounted -benchtime 2x ./journal/
func BenchmarkRunsAllCounted(b *testing.B) {
	path := cachedJournal(b, 100_000)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		j, err := Open(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		runs, err := j.Runs()
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range runs {
			if _, err := j.Count(r.ID); err != nil {
				b.Fatal(err)
			}
		}
		j.Close()
	}
}

// cachedJournal returns the path of a journal of n runs (run i with i%7
// calls, every tenth still running), built on first use and kept in the
// temp directory for later benchmark runs.
func cachedJournal(b *testing.B, n int) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("agentos-bench-runs-%d", n))
	path := filepath.Join(dir, fmt.Sprintf("journal-format%d.db", storageFormat))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	tmp := path + ".building"
	os.Remove(tmp)
	if migrateCached(b, filepath.Join(dir, fmt.Sprintf("journal-format%d.db", storageFormat-1)), tmp, path) {
		return path
	}
	j, err := Open(tmp, Options{Durability: NoSync})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for i := range n {
		run, err := j.Begin(RunMeta{Kind: "exec", Tool: fmt.Sprintf("tools/t%d.ts", i%100), Args: benchRequest})
		if err != nil {
			b.Fatal(err)
		}
		h := run.Middleware()(trivialHost)
		for s := range i % 7 {
			if _, err := h.Do(context.Background(), driver.Call{Seq: uint64(s + 1), Driver: "fs", Op: "read_file", Request: benchRequest}); err != nil {
				b.Fatal(err)
			}
		}
		if i%10 == 9 {
			continue
		}
		if err := run.End(StatusOK, benchResponse, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	b.Logf("built a journal of %d runs in %v: %s", n, time.Since(start).Round(time.Millisecond), path)
	return path
}

// migrateCached makes path from prev, a journal of the format before this
// one, when there is one: a copy of it (tmp while it is made), migrated
// as any older journal is when opened (quicker than building anew, and
// the same runs: before and after figures compare).
func migrateCached(b *testing.B, prev, tmp, path string) bool {
	src, err := os.ReadFile(prev)
	if err != nil {
		return false
	}
	if err := os.WriteFile(tmp, src, 0o600); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	j, err := Open(tmp, Options{Durability: NoSync})
	if err != nil {
		b.Fatal(err)
	}
	if err := j.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	b.Logf("migrated a copy of %s in %v: %s", prev, time.Since(start).Round(time.Millisecond), path)
	return true
}

// TestReadOnlyLists: a journal opened read-only lists its runs (beside
// another reader), refuses writes, and a journal of an older format is
// migrated by its first read-only open.
func TestReadOnlyLists(t *testing.T) {
	j, path := openTemp(t, Options{})
	recordRuns(t, j, 6)
	want := newestFirst(t, j)
	j.Close()
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ro2, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("a second reader: %v", err)
	}
	ro2.Close()
	checkListing(t, ro, pageAll(t, ro, 4), want)
	if _, err := ro.Begin(RunMeta{Kind: "exec"}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Begin on a read-only journal: %v, want ErrReadOnly", err)
	}
	if err := ro.Close(); err != nil {
		t.Errorf("Close of a read-only journal: %v", err)
	}

	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		tx.DeleteBucket(bucketStarted)
		return tx.Bucket(bucketMeta).Put(keyFormat, []byte("2"))
	})
	db.Close()
	ro, err = Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	checkListing(t, ro, pageAll(t, ro, 4), want)
	ro.Close()
}
