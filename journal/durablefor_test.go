package journal

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/agentos-run/agentos/driver"
)

// committedSeqs returns the seqs of run id's entries as committed, without
// the read barrier that would wait for queued writes.
func committedSeqs(t *testing.T, j *Journal, id string) []uint64 {
	t.Helper()
	var seqs []uint64
	if err := j.readNow(func(st store) error {
		es, err := st.entries(id)
		for _, e := range es {
			seqs = append(seqs, e.Seq)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return seqs
}

func paidLLM(c driver.Call) bool { return c.Driver == "llm" }

// A DurableFor run holds its unpaid calls until its next paid call, which
// is committed with them before it is answered, and commits its end before
// End returns: a forge's path check and tests share the commit of the
// model's next answer or of the end instead of taking one each.
func TestDurableForHoldsUnpaidCalls(t *testing.T) {
	both(t, func(t *testing.T) {
		j := openAt(t, filepath.Join(t.TempDir(), "j.db"), Options{Durability: GroupCommit})
		run := mustBegin(t, j, RunMeta{Kind: "forge"})
		h := run.DurableFor(paidLLM).Middleware()(echoDevices().host())
		do := func(seq uint64, drv string) {
			t.Helper()
			if _, err := h.Do(context.Background(), call(seq, drv, "op", "")); err != nil {
				t.Fatal(err)
			}
		}
		do(1, "forge")
		if n, err := j.Count(run.ID()); err != nil || n != 0 {
			t.Fatalf("an unpaid call is held, not queued: Count is %d (%v), want 0", n, err)
		}
		do(2, "llm")
		if got := committedSeqs(t, j, run.ID()); len(got) != 2 || got[0] != 1 || got[1] != 2 {
			t.Fatalf("a paid call is committed with the calls held before it, before it is answered: committed %v, want [1 2]", got)
		}
		do(3, "forge")
		do(4, "memory")
		if err := run.End(StatusOK, json.RawMessage(`1`), nil); err != nil {
			t.Fatal(err)
		}
		if got := committedSeqs(t, j, run.ID()); len(got) != 4 {
			t.Fatalf("End commits the held calls with the end before it returns: committed %v, want [1 2 3 4]", got)
		}
		if got := committedStatus(t, j, run.ID()); got != StatusOK {
			t.Fatalf("after End the committed status is %q, want %q", got, StatusOK)
		}
	})
}

// Under SyncEach a DurableFor run holds nothing: every call is committed
// before it is answered.
func TestDurableForHoldsNothingUnderSyncEach(t *testing.T) {
	j, _ := openTemp(t, Options{Durability: SyncEach})
	run := mustBegin(t, j, RunMeta{Kind: "forge"})
	h := run.DurableFor(paidLLM).Middleware()(echoDevices().host())
	if _, err := h.Do(context.Background(), call(1, "forge", "taken", "")); err != nil {
		t.Fatal(err)
	}
	if got := committedSeqs(t, j, run.ID()); len(got) != 1 {
		t.Fatalf("under SyncEach the unpaid call is committed before it is answered: committed %v", got)
	}
}

// A crash loses the calls held since the last paid one, never a paid one:
// the recovered run replays the paid calls and performs the held ones
// again; an interruption keeps them all.
func TestDurableForCrashLosesOnlyHeldCalls(t *testing.T) {
	for _, c := range []struct {
		name      string
		interrupt bool
		want      int
	}{{"crash", false, 2}, {"interrupt", true, 3}} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j.db")
			j, err := Open(path, Options{Durability: GroupCommit})
			if err != nil {
				t.Fatal(err)
			}
			run := mustBegin(t, j, RunMeta{Kind: "forge"})
			h := run.DurableFor(paidLLM).Middleware()(echoDevices().host())
			for seq, drv := range []string{"forge", "llm", "forge"} {
				if _, err := h.Do(context.Background(), call(uint64(seq+1), drv, "op", "")); err != nil {
					t.Fatal(err)
				}
			}
			if c.interrupt {
				if err := run.Interrupt("shutdown"); err != nil {
					t.Fatal(err)
				}
			}
			if err := j.Close(); err != nil { // the process ends here: the run never ends
				t.Fatal(err)
			}
			j = openAt(t, path, Options{Durability: GroupCommit})
			rec, err := j.Recover(run.ID())
			if err != nil {
				t.Fatal(err)
			}
			d := echoDevices()
			h = rec.Middleware()(d.host())
			for seq, drv := range []string{"forge", "llm", "forge"} {
				if _, err := h.Do(context.Background(), call(uint64(seq+1), drv, "op", "")); err != nil {
					t.Fatal(err)
				}
			}
			if got := int(d.calls.Load()); got != 3-c.want {
				t.Fatalf("the recovered run performed %d calls again, want %d (the %d recorded are replayed)", got, 3-c.want, c.want)
			}
		})
	}
}
