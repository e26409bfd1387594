package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agentos-run/agentos/driver"
)

// bigString is a JSON string of n bytes of payload, different per seed.
func bigString(n int, seed string) json.RawMessage {
	b, _ := json.Marshal(seed + strings.Repeat("x", n))
	return b
}

// recordRun records a finished run whose calls answer answer(seq) for a
// request request(seq), and returns its id.
func recordRun(t testing.TB, j *Journal, n int, request, answer func(seq uint64) json.RawMessage) string {
	t.Helper()
	r := mustBegin(t, j, RunMeta{Kind: "exec", Tool: "tools/t.ts"})
	h := r.Middleware()(driver.HostFunc(func(_ context.Context, c driver.Call) (json.RawMessage, error) {
		return answer(c.Seq), nil
	}))
	for seq := uint64(1); seq <= uint64(n); seq++ {
		if _, err := h.Do(context.Background(), driver.Call{Seq: seq, Driver: "fs", Op: "read", Request: request(seq)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.End(StatusOK, json.RawMessage(`"done"`), nil); err != nil {
		t.Fatal(err)
	}
	return r.ID()
}

// fileSize is the size of the journal file at path, or under postgres
// what its tables hold.
func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	if _, ok := pgPaths.Load(path); ok {
		return int64(len(storedBytes(t, path)))
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// Issue 10, item 10: one run of 41 calls grew the journal to 740 MB; every
// call kept its payload whole, however often the same bytes came back. A
// payload over the blob threshold is now stored once, by content hash:
// forty calls that read the same megabyte take about a megabyte, and
// reading the run back (entries, replay, export) gives every payload whole.
func TestLargePayloadsStoredOnce(t *testing.T) {
	both(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "journal.db")
		j, err := openStorage(t, path, Options{Durability: NoSync})
		if err != nil {
			t.Fatal(err)
		}
		page := bigString(1<<20, "page:")
		small := func(seq uint64) json.RawMessage {
			return json.RawMessage(fmt.Sprintf(`{"n":%d,"path":"big.txt"}`, seq%2))
		}
		id := recordRun(t, j, 40, small, func(uint64) json.RawMessage { return page })
		// Large requests too: the same megabyte written twenty times.
		id2 := recordRun(t, j, 20, func(uint64) json.RawMessage { return page }, func(uint64) json.RawMessage { return json.RawMessage(`true`) })
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		size := fileSize(t, path)
		t.Logf("60 calls carrying the same 1 MiB: a %.1f MiB file", float64(size)/(1<<20))
		if size > 8<<20 {
			t.Fatalf("60 calls carrying the same 1 MiB take %d MiB on disk, want it stored once", size>>20)
		}
		j = openAt(t, path, Options{})
		es := mustEntries(t, j, id)
		if len(es) != 40 || !bytes.Equal(es[39].Response, page) || !bytes.Equal(es[0].Request, small(1)) {
			t.Fatalf("entries read back: %d, last response %d bytes", len(es), len(es[39].Response))
		}
		if es := mustEntries(t, j, id2); len(es) != 20 || !bytes.Equal(es[7].Request, page) {
			t.Fatal("a large request did not read back whole")
		}
		// Replay answers from the blobs.
		p, err := j.Replayer(id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Middleware()(forbidden(t)).Do(context.Background(), driver.Call{Seq: 3, Driver: "fs", Op: "read", Request: small(3)})
		if err != nil || !bytes.Equal(got, page) {
			t.Fatalf("replayed answer: %d bytes, %v", len(got), err)
		}
		// An export holds the payloads, never a reference to the blob store, and
		// imports into another journal.
		d, err := j.Export(id2)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(d)
		if bytes.Contains(b, []byte("_blob")) || len(b) < 20<<20 {
			t.Fatalf("the export holds blob references or lacks payloads (%d bytes)", len(b))
		}
		other := openAt(t, filepath.Join(t.TempDir(), "other.db"), Options{Durability: NoSync})
		if err := other.Import(d); err != nil {
			t.Fatal(err)
		}
		if es := mustEntries(t, other, id2); len(es) != 20 || !bytes.Equal(es[19].Request, page) {
			t.Fatal("imported entries do not read back whole")
		}
	})
}

// A journal written before blobs existed (every payload inline) reads,
// replays and prunes as before.
func TestInlineEntriesStillRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	payload := bigString(100<<10, "old:")
	e := Entry{Seq: 1, Driver: "fs", Op: "read", Request: json.RawMessage(`{"path":"a"}`), Response: payload, At: time.Now()}
	meta, _ := json.Marshal(RunMeta{ID: "20250101-000000.000-aaaaaa", Kind: "exec", Started: time.Now().Add(-48 * time.Hour), Status: StatusOK})
	if err := db.Update(func(tx *bolt.Tx) error {
		runs, _ := tx.CreateBucketIfNotExists(bucketRuns)
		entries, _ := tx.CreateBucketIfNotExists(bucketEntries)
		tx.CreateBucketIfNotExists(bucketSources)
		b, _ := entries.CreateBucket([]byte("20250101-000000.000-aaaaaa"))
		if err := b.Put(seqKey(1), e.appendJSON(nil)); err != nil {
			return err
		}
		return runs.Put([]byte("20250101-000000.000-aaaaaa"), meta)
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	j := openAt(t, path, Options{})
	es := mustEntries(t, j, "20250101-000000.000-aaaaaa")
	if len(es) != 1 || !bytes.Equal(es[0].Response, payload) {
		t.Fatalf("old entry: %+v", es)
	}
	rep, err := j.Prune(PruneOptions{OlderThan: time.Hour})
	if err != nil || rep.Runs != 1 {
		t.Fatalf("prune of an old-format run: %+v %v", rep, err)
	}
}

// A journal from a newer agentos (a storage format this one does not know)
// is refused with a clear error, never misread.
func TestNewerFormatRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	db, _ := bolt.Open(path, 0o600, nil)
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyFormat, []byte("99")) })
	db.Close()
	if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "format 99") || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("opening a format-99 journal: %v", err)
	}
}

// Prune deletes finished runs by age, count and stored bytes, then the
// payloads and sources no remaining run refers to; it never deletes a run
// that has not ended.
func TestPrune(t *testing.T) {
	both(t, func(t *testing.T) {
		clk := newClock()
		path := filepath.Join(t.TempDir(), "journal.db")
		j, err := openStorage(t, path, Options{Durability: NoSync, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		shared := bigString(64<<10, "shared:")
		req := func(seq uint64) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"seq":%d}`, seq)) }
		var ids []string
		for i := range 6 {
			own := bigString(64<<10, fmt.Sprintf("own%d:", i))
			if err := j.PutSource(fmt.Sprintf("hash%d", i), []byte("source")); err != nil {
				t.Fatal(err)
			}
			r := mustBegin(t, j, RunMeta{Kind: "exec", Tool: "tools/t.ts", Hash: fmt.Sprintf("hash%d", i)})
			h := r.Middleware()(driver.HostFunc(func(_ context.Context, c driver.Call) (json.RawMessage, error) {
				if c.Seq == 1 {
					return shared, nil
				}
				return own, nil
			}))
			for seq := uint64(1); seq <= 3; seq++ {
				h.Do(context.Background(), driver.Call{Seq: seq, Driver: "fs", Op: "read", Request: req(seq)})
			}
			if i < 5 {
				r.End(StatusOK, nil, nil)
			} // the last run is still running: never pruned
			ids = append(ids, r.ID())
			clk.Advance(24 * time.Hour)
		}
		j.Close()
		j, err = openStorage(t, path, Options{Durability: NoSync, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()

		// Started over 100 hours ago: runs 0 and 1 (and their own payloads and
		// sources).
		rep, err := j.Prune(PruneOptions{OlderThan: 100 * time.Hour})
		if err != nil || rep.Runs != 2 || rep.Blobs != 2 || rep.Sources != 2 || rep.Bytes < 128<<10 {
			t.Fatalf("prune by age: %+v %v", rep, err)
		}
		for _, id := range ids[:2] {
			if _, err := j.Get(id); !errors.Is(err, ErrNoRun) {
				t.Fatalf("run %s survived: %v", id, err)
			}
		}
		// The shared payload is kept for the runs that remain.
		if es := mustEntries(t, j, ids[2]); len(es) != 3 || !bytes.Equal(es[0].Response, shared) {
			t.Fatal("a payload still referenced was deleted")
		}
		// Keep the newest finished run: runs 2 and 3 go; 5 is unfinished, kept.
		if rep, err = j.Prune(PruneOptions{KeepRuns: 1}); err != nil || rep.Runs != 2 || rep.Kept != 2 {
			t.Fatalf("prune by count: %+v %v", rep, err)
		}
		// At most 100 KiB stored: the last finished run goes too, the
		// unfinished one stays whatever its size.
		if rep, err = j.Prune(PruneOptions{KeepBytes: 100 << 10}); err != nil || rep.Runs != 1 || rep.Kept != 1 {
			t.Fatalf("prune by bytes: %+v %v", rep, err)
		}
		runs, _ := j.Runs()
		if len(runs) != 1 || runs[0].ID != ids[5] {
			t.Fatalf("left: %+v", runs)
		}
		if es := mustEntries(t, j, ids[5]); len(es) != 3 || !bytes.Equal(es[0].Response, shared) {
			t.Fatal("the unfinished run lost its payloads")
		}
		if err := j.Check(); err != nil {
			t.Fatal(err)
		}
	})
}

// Compact gives the space of pruned runs back to the file system; the
// journal opens and reads as before.
func TestCompact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(path, Options{Durability: NoSync})
	if err != nil {
		t.Fatal(err)
	}
	var keep string
	for i := range 8 {
		id := recordRun(t, j, 4, func(seq uint64) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"s":%d}`, seq)) },
			func(seq uint64) json.RawMessage { return bigString(256<<10, fmt.Sprintf("%d-%d", i, seq)) })
		keep = id
	}
	if _, err := j.Prune(PruneOptions{KeepRuns: 1}); err != nil {
		t.Fatal(err)
	}
	// While the journal is open, it cannot be compacted.
	if _, _, err := Compact(path); err == nil || !strings.Contains(err.Error(), "another agentos process") {
		t.Fatalf("compacting a journal in use: %v", err)
	}
	j.Close()
	before := fileSize(t, path)
	b, a, err := Compact(path)
	if err != nil {
		t.Fatal(err)
	}
	if b != before || a != fileSize(t, path) || a > before/3 {
		t.Fatalf("compaction: %d -> %d bytes (file %d before)", b, a, before)
	}
	j = openAt(t, path, Options{})
	if es := mustEntries(t, j, keep); len(es) != 4 || len(es[3].Response) < 256<<10 {
		t.Fatal("the kept run does not read back after compaction")
	}
	if err := j.Check(); err != nil {
		t.Fatal(err)
	}
}

// A journal opened while a compaction replaces the file is the new file,
// never the old one unlinked under it (whose writes would be lost).
func TestOpenDuringCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(path, Options{Durability: NoSync})
	if err != nil {
		t.Fatal(err)
	}
	recordRun(t, j, 1, func(uint64) json.RawMessage { return nil }, func(uint64) json.RawMessage { return json.RawMessage(`1`) })
	j.Close()
	opened := make(chan *Journal, 1)
	compactHook = func() {
		// The old file is still at path and locked: an Open now waits on
		// its lock, and wins it after the rename.
		go func() {
			j, err := Open(path, Options{})
			if err != nil {
				t.Error(err)
			}
			opened <- j
		}()
		time.Sleep(200 * time.Millisecond)
	}
	defer func() { compactHook = nil }()
	if _, _, err := Compact(path); err != nil {
		t.Fatal(err)
	}
	j = <-opened
	if j == nil {
		t.FailNow()
	}
	id := recordRun(t, j, 1, func(uint64) json.RawMessage { return nil }, func(uint64) json.RawMessage { return json.RawMessage(`2`) })
	j.Close()
	j = openAt(t, path, Options{})
	if _, err := j.Get(id); err != nil {
		t.Fatalf("a run recorded by a journal opened during the compaction is lost: %v", err)
	}
}

// A quarantined run waits for 'agentos recover --run': retention never
// deletes it, however old, however many runs follow it.
func TestPruneKeepsQuarantinedRuns(t *testing.T) {
	both(t, func(t *testing.T) {
		clk := newClock()
		j, err := openStorage(t, filepath.Join(t.TempDir(), "journal.db"), Options{Durability: NoSync, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		q := mustBegin(t, j, RunMeta{Kind: "exec", Tool: "tools/bomb.ts"})
		if err := j.Quarantine(q.ID(), "its host died while it ran in-process"); err != nil {
			t.Fatal(err)
		}
		done := mustBegin(t, j, RunMeta{Kind: "exec", Tool: "tools/ok.ts"})
		done.End(StatusOK, nil, nil)
		clk.Advance(1000 * time.Hour)
		for _, opts := range []PruneOptions{{OlderThan: time.Hour}, {KeepRuns: 0, KeepBytes: 1}, {KeepRuns: 1, OlderThan: time.Minute}} {
			if _, err := j.Prune(opts); err != nil {
				t.Fatal(err)
			}
			if m, err := j.Get(q.ID()); err != nil || m.Status != StatusQuarantined {
				t.Fatalf("prune %+v: the quarantined run is gone or changed: %+v %v", opts, m, err)
			}
		}
		if _, err := j.Get(done.ID()); !errors.Is(err, ErrNoRun) {
			t.Errorf("the old finished run was kept: %v", err)
		}
	})
}

// TestOpenCurrentWritesNothing: opening a journal whose storage is already
// current (every bucket, this format) for writing commits nothing. A
// commit there would write bbolt's meta page and fdatasync it at every
// open: a replay, which opens the journal and writes nothing, would wait
// for the disk (its rate then fell below its recording's under load).
func TestOpenCurrentWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	j, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	recordRun(t, j, 3, func(seq uint64) json.RawMessage { return json.RawMessage(`{"path":"a"}`) },
		func(seq uint64) json.RawMessage { return json.RawMessage(`"x"`) })
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []Durability{GroupCommit, SyncEach, WriteEach} {
		j, err := Open(path, Options{Durability: d})
		if err != nil {
			t.Fatal(err)
		}
		if runs, err := j.Runs(); err != nil || len(runs) != 1 {
			t.Fatalf("%s: runs %v, %v; want the one recorded", d, runs, err)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			t.Fatalf("opening a current journal (%s) and closing it changed the file: Open committed a transaction", d)
		}
	}
}

// A runtime prunes by size (retention's keep_bytes) on a timer while runs
// write: the size estimate MUST NOT read bbolt's mapping unguarded, which
// a write that grows the file remaps (CI's race detector caught
// TestRetention this way). Run under -race.
func TestPruneBySizeWhileWriting(t *testing.T) {
	for round := range 10 { // each fresh file is remapped about 9 times as it grows
		pruneBySizeWhileWriting(t, filepath.Join(t.TempDir(), fmt.Sprintf("journal%d.db", round)))
	}
}

func pruneBySizeWhileWriting(t *testing.T, path string) {
	j, err := Open(path, Options{Durability: NoSync})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		big := bigString(256<<10, "grow:")
		for i := range 40 {
			r := mustBegin(t, j, RunMeta{Kind: "exec", Tool: "tools/t.ts"})
			h := r.Middleware()(driver.HostFunc(func(context.Context, driver.Call) (json.RawMessage, error) {
				return append(json.RawMessage(fmt.Sprintf(`"%d`, i)), big[1:]...), nil
			}))
			h.Do(context.Background(), driver.Call{Seq: 1, Driver: "fs", Op: "read", Request: json.RawMessage(`{}`)})
			r.End(StatusOK, nil, nil)
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		if _, err := j.Prune(PruneOptions{KeepBytes: 1 << 30}); err != nil {
			t.Fatal(err)
		}
	}
}
