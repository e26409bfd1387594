package journal

import (
	"context"
	"encoding/json"
	"testing"
)

// committedCount reads how many entries of run id are committed, without
// the read barrier that waits for the queue.
func committedCount(t *testing.T, j *Journal, id string) int {
	t.Helper()
	var n int
	if err := j.readNow(func(st store) error {
		var err error
		n, err = st.count(id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWriteEachCommitsBeforeUse: under WriteEach every call's entry is
// committed before its result is handed back, and a run's start and end
// before Begin and End return (what survives a kill -9), while the file
// is never fsynced (bbolt's NoSync).
func TestWriteEachCommitsBeforeUse(t *testing.T) {
	j, _ := openTemp(t, Options{Durability: WriteEach})
	if !j.opts.Durability.EachCommitted() || j.opts.Durability.fsyncs() {
		t.Fatalf("%v: want each record committed, and no fsync", j.opts.Durability)
	}
	if b, ok := j.st.(*boltStore); !ok || !b.db.NoSync {
		t.Fatalf("the embedded file is fsynced under %v", j.opts.Durability)
	}
	run := mustBegin(t, j, RunMeta{Kind: "exec", Tool: "tools/a.ts"})
	if got := committedStatus(t, j, run.ID()); got != StatusRunning {
		t.Fatalf("after Begin the file has status %q, want %q committed", got, StatusRunning)
	}
	h := run.Middleware()(echoDevices().host())
	for seq := uint64(1); seq <= 3; seq++ {
		if _, err := h.Do(context.Background(), call(seq, "fs", "read_file", `{"path":"a"}`)); err != nil {
			t.Fatal(err)
		}
		if n := committedCount(t, j, run.ID()); n != int(seq) {
			t.Fatalf("after call %d returned, %d entries are committed", seq, n)
		}
	}
	if err := run.End(StatusOK, json.RawMessage(`1`), nil); err != nil {
		t.Fatal(err)
	}
	if got := committedStatus(t, j, run.ID()); got != StatusOK {
		t.Fatalf("after End the file has status %q, want %q committed", got, StatusOK)
	}
}
