package journal

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// committedStatus reads run id's status from what is committed, without
// the read barrier: "" when the run is not in the file yet.
func committedStatus(t *testing.T, j *Journal, id string) string {
	t.Helper()
	var status string
	if err := j.readNow(func(st store) error {
		ms, err := st.prefixed(id)
		for _, m := range ms {
			if m.ID == id {
				status = m.Status
			}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return status
}

// Under SyncEach and with SyncRuns a run's start and end are committed
// before Begin and End return; under GroupCommit they are queued, and
// every read sees them all the same (read your writes).
func TestRunStartAndEndCommit(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
		wait bool
	}{
		{"sync-each", Options{Durability: SyncEach}, true},
		{"group-commit+sync-runs", Options{Durability: GroupCommit, SyncRuns: true}, true},
		{"no-sync+sync-runs", Options{Durability: NoSync, SyncRuns: true}, true},
		{"group-commit", Options{Durability: GroupCommit}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			j, _ := openTemp(t, c.opts)
			if err := j.PutSource("hash-1", []byte("export default () => 1")); err != nil {
				t.Fatal(err)
			}
			run := mustBegin(t, j, RunMeta{Kind: "exec", Tool: "tools/a.ts", Hash: "hash-1", Args: json.RawMessage(`{"n":1}`)})
			if c.wait {
				if got := committedStatus(t, j, run.ID()); got != StatusRunning {
					t.Fatalf("after Begin the file has status %q, want %q committed", got, StatusRunning)
				}
			}
			h := run.Middleware()(echoDevices().host())
			if _, err := h.Do(context.Background(), call(1, "fs", "read_file", `{"path":"a"}`)); err != nil {
				t.Fatal(err)
			}
			if err := run.End(StatusOK, json.RawMessage(`1`), nil); err != nil {
				t.Fatal(err)
			}
			if c.wait {
				if got := committedStatus(t, j, run.ID()); got != StatusOK {
					t.Fatalf("after End the file has status %q, want %q committed", got, StatusOK)
				}
			}
			// Every read sees the run's writes, queued or not.
			m, err := j.Get(run.ID())
			if err != nil || m.Status != StatusOK || string(m.Result) != "1" {
				t.Fatalf("Get after End: %+v, %v", m, err)
			}
			if n, err := j.Count(run.ID()); err != nil || n != 1 {
				t.Fatalf("Count after End: %d, %v", n, err)
			}
			if src, err := j.Source("hash-1"); err != nil || string(src) != "export default () => 1" {
				t.Fatalf("Source: %q, %v", src, err)
			}
			// And, the queue committed, so does the file.
			if got := committedStatus(t, j, run.ID()); got != StatusOK {
				t.Fatalf("after a read the file has status %q", got)
			}
		})
	}
}

// Runs begun concurrently under GroupCommit get distinct ids, and each
// run's calls stay its own.
func TestConcurrentQueuedBeginsAreDistinct(t *testing.T) {
	j, _ := openTemp(t, Options{Durability: GroupCommit, Now: fixedNow})
	const n = 200
	ids := make(chan string, n)
	errs := make(chan error, n)
	for range n {
		go func() {
			run, err := j.Begin(RunMeta{Kind: "exec", Tool: "tools/a.ts"})
			if err != nil {
				errs <- err
				return
			}
			if _, err := run.Middleware()(echoDevices().host()).Do(context.Background(), call(1, "fs", "read_file", `{"path":"a"}`)); err != nil {
				errs <- err
				return
			}
			if err := run.End(StatusOK, nil, nil); err != nil {
				errs <- err
				return
			}
			ids <- run.ID() // before its nil error: ids is closed once every error is in
			errs <- nil
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] {
			t.Fatalf("id %s issued twice", id)
		}
		seen[id] = true
		if c, err := j.Count(id); err != nil || c != 1 {
			t.Fatalf("run %s has %d calls (%v), want 1", id, c, err)
		}
	}
	runs, _ := j.Runs()
	if len(runs) != n {
		t.Fatalf("%d runs in the journal, want %d", len(runs), n)
	}
}

// fixedNow is a clock that never moves: every id falls in one millisecond.
func fixedNow() time.Time { return time.UnixMilli(1_780_000_000_000) }
