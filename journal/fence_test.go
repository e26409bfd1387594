package journal

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// Issue 24: a node paused (SIGSTOP) past its lease while another node took
// its run over, finished it and let its claim go. Resumed, the paused node
// writes on: the lease check alone lets it (nobody holds a live claim any
// more); the fencing token refuses every one of its writes, and the run
// stays as its second holder ended it.
func TestFenceRefusesPausedHolder(t *testing.T) {
	pgOnly(t, func(t *testing.T) {
		clk := newManualClock()
		path := filepath.Join(t.TempDir(), "journal.db")
		a := openAt(t, path, Options{Owner: "node-a", Lease: 10 * time.Second, Now: clk.Now, Durability: SyncEach})
		b := openAt(t, path, Options{Owner: "node-b", Lease: 10 * time.Second, Now: clk.Now, Durability: SyncEach})
		run := mustBegin(t, a, RunMeta{Kind: "forge"})
		ha := run.Middleware()(echoDevices().host())
		if _, err := ha.Do(context.Background(), call(1, "llm", "complete", `{"n":1}`)); err != nil {
			t.Fatal(err)
		}
		if run.Fence() != 1 {
			t.Fatalf("a new run's fencing token = %d, want 1", run.Fence())
		}

		clk.Advance(11 * time.Second) // a is paused: its claim lapses
		rec, err := b.Recover(run.ID())
		if err != nil {
			t.Fatal(err)
		}
		if rec.Run().Fence() <= run.Fence() {
			t.Fatalf("the takeover's token %d does not exceed the first holder's %d", rec.Run().Fence(), run.Fence())
		}
		hb := rec.Middleware()(echoDevices().host())
		for seq := uint64(1); seq <= 2; seq++ {
			if _, err := hb.Do(context.Background(), call(seq, "llm", "complete", `{"n":1}`)); err != nil {
				t.Fatal(err)
			}
		}
		if err := rec.Run().End(StatusOK, []byte(`{"by":"b"}`), nil); err != nil {
			t.Fatal(err)
		}

		// a wakes up (SIGCONT) before its renewer notices: its call, its
		// end, and a second try at the end are all refused at the store.
		if _, err := ha.Do(context.Background(), call(2, "llm", "complete", `{"n":"a"}`)); err == nil {
			t.Fatal("the paused node journaled a call of a run another node took over and finished")
		}
		err = run.End(StatusOK, []byte(`{"by":"a"}`), nil)
		if !errors.Is(err, ErrFenced) || !errors.Is(err, ErrClaimed) {
			t.Fatalf("the paused node's End: %v, want ErrFenced (wrapping ErrClaimed)", err)
		}
		m, err := b.Get(run.ID())
		if err != nil {
			t.Fatal(err)
		}
		if m.Status != StatusOK || string(m.Result) != `{"by":"b"}` {
			t.Fatalf("the run after the paused node woke: %s %s, want ok as b ended it", m.Status, m.Result)
		}
		entries, err := b.Entries(run.ID())
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 2 || string(entries[1].Request) != `{"n":1}` {
			t.Fatalf("entries after the paused node woke: %+v", entries)
		}
	})
}

// Issue 24: a run that ended is never claimed again, on either storage,
// whether or not its last holder still holds it: two nodes cannot both
// resume it, and a node cannot resume a forge another finished.
func TestClaimOfEndedRunRefused(t *testing.T) {
	both(t, func(t *testing.T) {
		clk := newManualClock()
		a, b := twoNodes(t, clk)
		if b == nil {
			b = a // the embedded journal: one process
		}
		for _, status := range []string{StatusOK, StatusFailed} {
			run := mustBegin(t, a, RunMeta{Kind: "forge"})
			if err := run.End(status, nil, nil); err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Second)
			ok, err := b.Claim(run.ID(), b.Owner(), 0)
			if ok || !errors.Is(err, ErrEnded) {
				t.Fatalf("claim of a run that ended %s: %v, %v; want false, ErrEnded", status, ok, err)
			}
			if _, err := b.Recover(run.ID()); !errors.Is(err, ErrEnded) {
				t.Fatalf("Recover of a run that ended %s: %v, want ErrEnded", status, err)
			}
		}
		// A quarantined run is still claimable ('agentos recover --run').
		run := mustBegin(t, a, RunMeta{Kind: "exec"})
		if err := a.Quarantine(run.ID(), "its host died"); err != nil {
			t.Fatal(err)
		}
		clk.Advance(11 * time.Second)
		if ok, err := b.Claim(run.ID(), b.Owner(), 0); !ok || err != nil {
			t.Fatalf("claim of a quarantined run: %v, %v; want true", ok, err)
		}
	})
}

// A second Recover of one run fences off the first, on the embedded
// journal too (two resumes in one process): only the newest writes.
func TestFenceSecondRecover(t *testing.T) {
	both(t, func(t *testing.T) {
		j, _ := openTemp(t, Options{Durability: SyncEach})
		run := mustBegin(t, j, RunMeta{Kind: "forge"})
		if _, err := run.Middleware()(echoDevices().host()).Do(context.Background(), call(1, "llm", "complete", `{}`)); err != nil {
			t.Fatal(err)
		}
		first, err := j.Recover(run.ID())
		if err != nil {
			t.Fatal(err)
		}
		second, err := j.Recover(run.ID())
		if err != nil {
			t.Fatal(err)
		}
		if second.Run().Fence() <= first.Run().Fence() {
			t.Fatalf("tokens %d then %d: want growing", first.Run().Fence(), second.Run().Fence())
		}
		if err := second.Run().Holds(); err != nil {
			t.Fatalf("the newest resume does not hold the run: %v", err)
		}
		if err := first.Run().Holds(); !errors.Is(err, ErrFenced) {
			t.Fatalf("the superseded resume's Holds: %v, want ErrFenced", err)
		}
		if _, err := first.Middleware()(echoDevices().host()).Do(context.Background(), call(2, "llm", "complete", `{}`)); err == nil {
			t.Fatal("the superseded resume journaled a call")
		}
		if err := first.Run().End(StatusOK, nil, nil); !errors.Is(err, ErrFenced) {
			t.Fatalf("the superseded resume's End: %v, want ErrFenced", err)
		}
		if _, err := second.Middleware()(echoDevices().host()).Do(context.Background(), call(2, "llm", "complete", `{}`)); err != nil {
			t.Fatal(err)
		}
		if err := second.Run().End(StatusOK, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := run.End(StatusFailed, nil, nil); !errors.Is(err, ErrFenced) {
			t.Fatalf("the original Run's End after two resumes: %v, want ErrFenced", err)
		}
	})
}

// failingStore fails every write while fail is set (a database that
// restarts under the node).
type failingStore struct {
	store
	fail atomic.Bool
}

func (s *failingStore) apply(batch []*write, owner string, now time.Time) error {
	if s.fail.Load() {
		return errors.New("conn closed: the server restarted")
	}
	return s.store.apply(batch, owner, now)
}

// Issue 24: an End that could not be written is returned, and leaves the
// run running and resumable: its Journal stops renewing the claim (before,
// it went on renewing for good, and the run was never resumed until the
// node restarted), so another node claims it once the lease lapses.
func TestEndFailureKeepsRunResumable(t *testing.T) {
	pgOnly(t, func(t *testing.T) {
		clk := newManualClock()
		path := filepath.Join(t.TempDir(), "journal.db")
		inner := openAt(t, path, Options{Owner: "node-a"})
		fs := &failingStore{store: inner.st}
		a := newJournal(fs, Options{Owner: "node-a2", Lease: 10 * time.Second, Now: clk.Now})
		t.Cleanup(func() { a.Close() })
		b := openAt(t, path, Options{Owner: "node-b", Lease: 10 * time.Second, Now: clk.Now})
		run := mustBegin(t, a, RunMeta{Kind: "forge"})
		fs.fail.Store(true)
		err := run.End(StatusOK, []byte(`{}`), nil)
		if err == nil {
			t.Fatal("End reported success although its write failed")
		}
		fs.fail.Store(false)
		if held := a.heldRuns(); len(held) != 0 {
			t.Fatalf("after a failed End the node still holds (and renews) %v", held)
		}
		if err := a.renew(); err != nil {
			t.Fatal(err)
		}
		m, err := b.Get(run.ID())
		if err != nil {
			t.Fatal(err)
		}
		if m.Status != StatusRunning {
			t.Fatalf("status after a failed End: %s, want running", m.Status)
		}
		clk.Advance(11 * time.Second)
		if ok, err := b.Claim(run.ID(), b.Owner(), 0); !ok || err != nil {
			t.Fatalf("another node cannot claim the run after a failed End and the lease: %v, %v", ok, err)
		}
	})
}
