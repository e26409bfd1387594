package journal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	bolt "go.etcd.io/bbolt"
)

// version is a test tool version's content hash.
func version(n int) string { return fmt.Sprintf("%064x", 0xa0+n) }

// recordToolRuns records n runs of three tools at three versions each
// (some without a hash), some requiring tools/lib.ts (at its own versions)
// as a module, every third pinned, every fifth left running, every
// seventh with a commit.
func recordToolRuns(t testing.TB, j *Journal, n int) {
	t.Helper()
	for i := range n {
		meta := RunMeta{Kind: "exec", Tool: fmt.Sprintf("tools/t%d.ts", i%3), Pinned: i%3 == 0}
		if i%4 != 3 {
			meta.Hash = version(i % 5 % 3)
		}
		if i%7 == 0 {
			meta.Commit = fmt.Sprintf("c%d", i)
		}
		if i%2 == 0 {
			meta.Modules = []Module{{Path: "tools/lib.ts", Hash: version(10 + i%4)}}
		}
		if i%6 == 1 { // a tool required by another: counted as Required
			meta.Modules = append(meta.Modules, Module{Path: "tools/t0.ts", Hash: version(1)})
		}
		run := mustBegin(t, j, meta)
		h := run.Middleware()(echoDevices().host())
		for s := range i % 3 {
			if _, err := h.Do(context.Background(), call(uint64(s+1), "clock", "now", "")); err != nil {
				t.Fatal(err)
			}
		}
		if i%5 == 4 {
			continue
		}
		if err := run.End(StatusOK, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// pageRunsOf lists q's runs in pages of limit, each page's cursor the
// previous page's last run.
func pageRunsOf(t testing.TB, j *Journal, q ToolQuery, limit int) []RunMeta {
	t.Helper()
	var out []RunMeta
	q.Limit = limit
	for range 1000 {
		var page []RunMeta
		if err := j.EachRunOf(q, func(m RunMeta) error { page = append(page, m); return nil }); err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if len(page) < limit {
			return out
		}
		q.Before = page[len(page)-1].ID
	}
	t.Fatal("the pages never ended")
	return nil
}

// runsOfTool is newestFirst's runs of tool (at hash, unless "").
func runsOfTool(t testing.TB, j *Journal, tool, hash string) []RunMeta {
	var out []RunMeta
	for _, r := range newestFirst(t, j) {
		if r.Tool == tool && (hash == "" || r.Hash == hash) {
			out = append(out, r)
		}
	}
	return out
}

// wantVersions is VersionsOf over every run (oldest first, by start then
// id), newest first with ties broken by the latest run's id.
func wantVersions(t testing.TB, j *Journal, path string) []Version {
	all := newestFirst(t, j)
	slices.Reverse(all)
	vs := VersionsOf(all, path)
	slices.SortStableFunc(vs, compareVersions)
	return vs
}

// checkVersions says whether Versions(path) is VersionsOf over every run.
func checkVersions(t *testing.T, j *Journal, path string) {
	t.Helper()
	got, err := j.Versions(path)
	if err != nil {
		t.Fatal(err)
	}
	want := wantVersions(t, j, path)
	show := func(vs []Version) string {
		var b strings.Builder
		for _, v := range vs {
			fmt.Fprintf(&b, "\n  %s runs=%d required=%d first=%s last=%s lastrun=%s commit=%q modules=%v",
				v.Hash[:8], v.Runs, v.Required, v.First.Format(time.StampMicro), v.Last.Format(time.StampMicro), v.LastRun, v.Commit, v.Modules)
		}
		return b.String()
	}
	if show(got) != show(want) {
		t.Errorf("Versions(%s):%s\nwant (what every run's metadata says):%s", path, show(got), show(want))
	}
}

// checkRunsOf checks that EachRunOf lists every run of every tool (and of
// every version) once, newest first, in pages of every size.
func checkRunsOf(t *testing.T, j *Journal, limits ...int) {
	t.Helper()
	for _, tool := range []string{"tools/t0.ts", "tools/t1.ts", "tools/t2.ts", "tools/lib.ts", "tools/none.ts"} {
		for _, hash := range []string{"", version(0), version(1), version(2)} {
			want := runsOfTool(t, j, tool, hash)
			for _, limit := range limits {
				checkListing(t, j, pageRunsOf(t, j, ToolQuery{Tool: tool, Version: hash}, limit), want)
			}
		}
		checkVersions(t, j, tool)
	}
}

// TestEachRunOfPages: a tool's runs (all, or one version's) listed from
// the tool index in pages of any size: every run once, newest first, runs
// that started at the same instant included, each with its count; the
// versions with their counts are those every run's metadata gives.
func TestEachRunOfPages(t *testing.T) {
	both(t, func(t *testing.T) {
		clk := &tiedClock{t: time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)}
		j, _ := openTemp(t, Options{Now: clk.Now})
		recordToolRuns(t, j, 40)
		checkRunsOf(t, j, 1, 2, 3, 5, 7, 40, 100)

		// Limit 0 lists every run; a bad query is refused, saying why.
		var all []RunMeta
		if err := j.EachRunOf(ToolQuery{Tool: "tools/t1.ts"}, func(m RunMeta) error { all = append(all, m); return nil }); err != nil {
			t.Fatal(err)
		}
		checkListing(t, j, all, runsOfTool(t, j, "tools/t1.ts", ""))
		for q, want := range map[*ToolQuery]string{
			{}:                                   "tool",
			{Tool: "tools/t1.ts", Limit: -1}:     "limit",
			{Tool: "tools/t1.ts", Before: "nox"}: "nox",
		} {
			err := j.EachRunOf(*q, func(RunMeta) error { return nil })
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("EachRunOf(%+v) = %v; want an error naming %q", *q, err, want)
			}
		}
	})
}

// TestToolIndexFollowsWrites: a run that adds a module is indexed under
// it; a pruned run leaves the index; a run imported over another (with
// another tool and version) is listed under its new tool only.
func TestToolIndexFollowsWrites(t *testing.T) {
	both(t, func(t *testing.T) {
		clk := newClock()
		j, _ := openTemp(t, Options{Now: clk.Now})
		recordToolRuns(t, j, 30)
		run := mustBegin(t, j, RunMeta{Kind: "exec", Tool: "tools/t2.ts", Hash: version(2)})
		if err := run.AddModule(Module{Path: "tools/lib.ts", Hash: version(19)}, []byte("export const x = 1;")); err != nil {
			t.Fatal(err)
		}
		if err := run.End(StatusOK, nil, nil); err != nil {
			t.Fatal(err)
		}
		checkVersions(t, j, "tools/lib.ts")

		if _, err := j.Prune(PruneOptions{KeepRuns: 8}); err != nil {
			t.Fatal(err)
		}
		checkRunsOf(t, j, 2, 3)

		// Import a t0 run over a t1 run, as another tool at a new version.
		old := runsOfTool(t, j, "tools/t1.ts", "")[0]
		d, err := j.Export(old.ID)
		if err != nil {
			t.Fatal(err)
		}
		d.Run.Tool, d.Run.Hash, d.Run.Status = "tools/t0.ts", version(2), StatusOK
		d.Run.Started = clk.Now().Add(time.Hour)
		if err := j.Import(d); err != nil {
			t.Fatal(err)
		}
		checkRunsOf(t, j, 1, 4)
		if got := pageRunsOf(t, j, ToolQuery{Tool: "tools/t0.ts", Version: version(2)}, 1); len(got) == 0 || got[0].ID != old.ID {
			t.Errorf("the imported run is not the newest run of tools/t0.ts at its new version: %v", got)
		}
	})
}

// TestToolIndexOldJournal: a journal written before the tool index
// (storage format 3) gets it when opened: every run is listed by tool,
// and the runs recorded after the migration too.
func TestToolIndexOldJournal(t *testing.T) {
	both(t, func(t *testing.T) {
		clk := &tiedClock{t: time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)}
		j, path := openTemp(t, Options{Now: clk.Now})
		recordToolRuns(t, j, 25)
		j.Close()
		makeFormat3(t, path)

		j = openAt(t, path, Options{Now: clk.Now})
		checkRunsOf(t, j, 3)
		recordToolRuns(t, j, 4)
		checkRunsOf(t, j, 2)
	})
}

// makeFormat3 makes the journal at path what an agentos before the tool
// index wrote: no index, storage format 3.
func makeFormat3(t *testing.T, path string) {
	t.Helper()
	if onPostgres(t) {
		conn, err := pgx.Connect(context.Background(), pgDSNFor(t, path))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP TABLE agentos_journal_tool_runs; UPDATE agentos_journal_meta SET value = '3' WHERE key = 'format'"); err != nil {
			t.Fatal(err)
		}
		return
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketTools); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keyFormat, []byte("3"))
	}); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRunsOfTool100k is a tool's page over the journal of 100,000
// runs (cachedJournal: 100 tools, a thousand runs each): the tool's
// versions, its first page of 50 runs, and a page 500 runs deep, from the
// tool index.
//
//	go test -run '^$' -bench RunsOfTool100k -benchtime 20x ./journal/
func BenchmarkRunsOfTool100k(b *testing.B) {
	j, err := Open(cachedJournal(b, 100_000), Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	var deep string
	if err := j.EachRunOf(ToolQuery{Tool: "tools/t5.ts", Limit: 500}, func(m RunMeta) error { deep = m.ID; return nil }); err != nil {
		b.Fatal(err)
	}
	for _, page := range []struct {
		name   string
		before string
	}{{"first", ""}, {"deep", deep}} {
		b.Run(page.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := j.ToolVersions("tools/t5.ts"); err != nil {
					b.Fatal(err)
				}
				n := 0
				if err := j.EachRunOf(ToolQuery{Tool: "tools/t5.ts", Before: page.before, Limit: 50}, func(RunMeta) error { n++; return nil }); err != nil {
					b.Fatal(err)
				}
				if n != 50 {
					b.Fatalf("listed %d runs, want 50", n)
				}
			}
		})
	}
}

// BenchmarkToolVersionsOneTool100k is the worst case of a tool's page: a
// journal of 100,000 runs all of one tool, at 3 versions (built once, and
// kept in the temp directory): the versions (a tally of the tool's
// 100,000 index entries) and a version's first page of 50 runs.
//
//	go test -run '^$' -bench ToolVersionsOneTool100k -benchtime 10x ./journal/
func BenchmarkToolVersionsOneTool100k(b *testing.B) {
	dir := filepath.Join(os.TempDir(), "agentos-bench-tool-100000")
	path := filepath.Join(dir, fmt.Sprintf("journal-format%d.db", storageFormat))
	if _, err := os.Stat(path); err != nil {
		buildOneTool(b, dir, path, 100_000)
	}
	j, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	b.ResetTimer()
	for range b.N {
		vs, err := j.ToolVersions("tools/one.ts")
		if err != nil || len(vs) != 3 {
			b.Fatalf("versions %v, %v; want 3", vs, err)
		}
		n := 0
		if err := j.EachRunOf(ToolQuery{Tool: "tools/one.ts", Version: vs[0].Hash, Limit: 50}, func(RunMeta) error { n++; return nil }); err != nil || n != 50 {
			b.Fatalf("listed %d runs (%v), want 50", n, err)
		}
	}
}

// buildOneTool records n ended runs of tools/one.ts, run i at version i%3,
// into the journal at path.
func buildOneTool(b *testing.B, dir, path string, n int) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	tmp := path + ".building"
	os.Remove(tmp)
	j, err := Open(tmp, Options{Durability: NoSync})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		run, err := j.Begin(RunMeta{Kind: "exec", Tool: "tools/one.ts", Hash: version(i % 3), Args: benchRequest})
		if err == nil {
			err = run.End(StatusOK, benchResponse, nil)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
}

// nsClock is an Options.Now that steps 300 ns: runs whose starts differ
// by less than PostgreSQL's microsecond.
type nsClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *nsClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(300 * time.Nanosecond)
	return c.t
}

// TestEachRunOfSubMicrosecond: runs that started within one microsecond
// (which PostgreSQL's timestamps round together) are paged without a skip
// or a repeat.
func TestEachRunOfSubMicrosecond(t *testing.T) {
	both(t, func(t *testing.T) {
		j, _ := openTemp(t, Options{Now: (&nsClock{t: time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)}).Now})
		recordToolRuns(t, j, 24)
		for _, limit := range []int{1, 2, 3} {
			for _, hash := range []string{"", version(0)} {
				checkListing(t, j, pageRunsOf(t, j, ToolQuery{Tool: "tools/t0.ts", Version: hash}, limit), runsOfTool(t, j, "tools/t0.ts", hash))
			}
		}
	})
}
