package journal

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/internal/testutil"
)

// manualClock is an Options.Now that moves only when told to: leases lapse
// in tests without sleeping. It starts at the wall clock's time, which
// RunMeta.Shown compares claims with.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func newManualClock() *manualClock {
	return &manualClock{t: time.Now().UTC().Truncate(time.Millisecond)}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// twoNodes opens two Journals on one storage, as two nodes sharing a
// PostgreSQL journal do (under bbolt, one file can have one Journal only:
// the second is nil).
func twoNodes(t *testing.T, clk *manualClock) (a, b *Journal) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.db")
	a = openAt(t, path, Options{Owner: "node-a", Lease: 10 * time.Second, Now: clk.Now})
	if onPostgres(t) {
		b = openAt(t, path, Options{Owner: "node-b", Lease: 10 * time.Second, Now: clk.Now})
	}
	return a, b
}

// The embedded journal has one process: every claim on a run that exists
// succeeds.
func TestClaimEmbedded(t *testing.T) {
	j, _ := openTemp(t, Options{})
	r := mustBegin(t, j, RunMeta{Kind: "exec"})
	for _, owner := range []string{"a", "b", j.Owner()} {
		if ok, err := j.Claim(r.ID(), owner, time.Minute); !ok || err != nil {
			t.Fatalf("Claim(%s) on bbolt = %v, %v; want true", owner, ok, err)
		}
	}
	if _, err := j.Claim("no-such-run", "a", 0); !errors.Is(err, ErrNoRun) {
		t.Fatalf("Claim of a missing run: %v, want ErrNoRun", err)
	}
	if j.Shared() {
		t.Fatal("a bbolt journal says it is shared")
	}
}

// Issue 13: two nodes share one journal. The node that began a run holds
// it; the other cannot claim, list as resumable, or recover it until the
// claim lapses; then it takes the run over, and the first node, finding
// its claim lost, journals none of the run's calls any more.
func TestClaimLease(t *testing.T) {
	pgOnly(t, func(t *testing.T) {
		clk := newManualClock()
		a, b := twoNodes(t, clk)
		if !a.Shared() {
			t.Fatal("a PostgreSQL journal says it is not shared")
		}
		run := mustBegin(t, a, RunMeta{Kind: "exec", Tool: "tools/t.ts"})
		dev := echoDevices()
		ha := run.Middleware()(dev.host())
		if _, err := ha.Do(context.Background(), call(1, "fs", "read_file", `{"path":"a"}`)); err != nil {
			t.Fatal(err)
		}
		// #1 is group-committed: wait until it is written, before the
		// clock moves on (written late, after b's takeover below, it would
		// be fenced off like #2).
		if err := a.PutSource("after-the-first-call", []byte("x")); err != nil {
			t.Fatal(err)
		}

		// Held by a: b keeps off.
		m, err := b.Get(run.ID())
		if err != nil {
			t.Fatal(err)
		}
		if m.Owner != "node-a" || !m.LeaseUntil.Equal(clk.Now().Add(10*time.Second)) || !b.HeldElsewhere(m) || a.HeldElsewhere(m) {
			t.Fatalf("the claim as b reads it: owner %q until %v (now %v)", m.Owner, m.LeaseUntil, clk.Now())
		}
		if ok, err := b.Claim(run.ID(), b.Owner(), 0); ok || err != nil {
			t.Fatalf("b claimed a run a holds: %v, %v", ok, err)
		}
		if _, err := b.Recover(run.ID()); !errors.Is(err, ErrClaimed) {
			t.Fatalf("b recovered a run a holds: %v, want ErrClaimed", err)
		}
		if un, _ := b.Unfinished(); len(un) != 0 {
			t.Fatalf("b lists a's run in flight as unfinished: %+v", un)
		}
		if un, _ := a.Unfinished(); len(un) != 1 {
			t.Fatalf("a does not list its own unfinished run: %+v", un)
		}

		// a renews: the claim outlives its first term.
		clk.Advance(6 * time.Second)
		if err := a.renew(); err != nil {
			t.Fatal(err)
		}
		clk.Advance(6 * time.Second) // 12 s after Begin, 6 s after renewing
		if ok, _ := b.Claim(run.ID(), b.Owner(), 0); ok {
			t.Fatal("b claimed a run whose claim a renewed")
		}

		// a stops renewing (its node hangs, or died): the claim lapses.
		clk.Advance(5 * time.Second)
		m, _ = b.Get(run.ID())
		if b.HeldElsewhere(m) {
			t.Fatal("a lapsed claim still holds the run")
		}
		if un, _ := b.Unfinished(); len(un) != 1 {
			t.Fatalf("b does not list a run whose claim lapsed: %+v", un)
		}
		rec, err := b.Recover(run.ID())
		if err != nil {
			t.Fatalf("b cannot recover a run whose claim lapsed: %v", err)
		}
		if m, _ = a.Get(run.ID()); m.Owner != "node-b" || !a.HeldElsewhere(m) {
			t.Fatalf("after b's takeover a reads owner %q", m.Owner)
		}

		// a wakes up, not knowing yet: its write to the run is fenced off
		// (under group commit its device was called; the entry is refused).
		if _, err := ha.Do(context.Background(), call(2, "fs", "read_file", `{"path":"stale"}`)); err != nil {
			t.Fatalf("a's group-committed call: %v", err)
		}
		if err := a.PutSource("after-the-fenced-write", []byte("x")); err != nil { // waited: #2 has been tried
			t.Fatal(err)
		}
		if n := mustCount(t, b, run.ID()); n != 1 || !errors.Is(a.lostWrites(run.ID()), ErrClaimed) {
			t.Fatalf("a's write after b took the run over: %d calls in the journal, a's error %v", n, a.lostWrites(run.ID()))
		}
		// Its renewal finds the run lost: it performs no more of its I/O,
		// and cannot end it under b.
		if err := a.renew(); err != nil {
			t.Fatal(err)
		}
		_, err = ha.Do(context.Background(), call(3, "fs", "read_file", `{"path":"c"}`))
		if de := abortCode(t, err); de.Code != driver.CodeUnavailable {
			t.Fatalf("a's call after losing its claim: %+v", de)
		}
		if n := dev.calls.Load(); n != 2 {
			t.Fatalf("a's devices called %d times, want 2", n)
		}
		if err := run.End(StatusOK, nil, nil); !errors.Is(err, ErrClaimed) {
			t.Fatalf("a ended a run b holds: %v", err)
		}
		if m, _ = b.Get(run.ID()); m.Status != StatusRunning || m.Owner != "node-b" {
			t.Fatalf("a's End changed b's run: %s, owner %q", m.Status, m.Owner)
		}

		// b finishes the run: the recorded call is replayed, the next is live.
		devB := echoDevices()
		hb := rec.Middleware()(devB.host())
		for seq := uint64(1); seq <= 2; seq++ {
			if _, err := hb.Do(context.Background(), call(seq, "fs", "read_file", []string{"", `{"path":"a"}`, `{"path":"b"}`}[seq])); err != nil {
				t.Fatalf("b resuming #%d: %v", seq, err)
			}
		}
		if devB.calls.Load() != 1 {
			t.Fatalf("b's devices called %d times, want 1 (call #1 is recorded)", devB.calls.Load())
		}
		if err := rec.Run().End(StatusOK, []byte(`1`), nil); err != nil {
			t.Fatal(err)
		}
		if m, _ = a.Get(run.ID()); m.Status != StatusOK || mustCount(t, a, run.ID()) != 2 {
			t.Fatalf("after b ended it: %s, %d calls", m.Status, mustCount(t, a, run.ID()))
		}
	})
}

func mustCount(t *testing.T, j *Journal, id string) int {
	t.Helper()
	n, err := j.Count(id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A node that closes its journal (a shutdown), or interrupts a run, lets its
// claims go at once: another node need not wait for the lease.
func TestCloseReleasesClaims(t *testing.T) {
	pgOnly(t, func(t *testing.T) {
		clk := newManualClock()
		a, b := twoNodes(t, clk)
		closing := mustBegin(t, a, RunMeta{Kind: "forge"})
		stopped := mustBegin(t, a, RunMeta{Kind: "exec"})
		if err := stopped.Interrupt("cancelled: shutdown"); err != nil {
			t.Fatal(err)
		}
		if ok, err := b.Claim(stopped.ID(), b.Owner(), 0); !ok || err != nil {
			t.Fatalf("b cannot claim a run a interrupted: %v, %v", ok, err)
		}
		if ok, _ := b.Claim(closing.ID(), b.Owner(), 0); ok {
			t.Fatal("b claimed a run a holds")
		}
		if m, _ := b.Get(closing.ID()); m.Shown() != StatusRunning {
			t.Fatalf("a run another live node holds is shown %s", m.Shown())
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		m, _ := b.Get(closing.ID())
		if m.Shown() != StatusInterrupted || m.ResumeCommand() == "" {
			t.Fatalf("a run whose node closed the journal: %s %q", m.Shown(), m.ResumeCommand())
		}
		if ok, err := b.Claim(closing.ID(), b.Owner(), 0); !ok || err != nil {
			t.Fatalf("b cannot claim a run of a closed journal: %v, %v", ok, err)
		}
	})
}

// Nodes racing for one lapsed run: exactly one wins it.
func TestClaimRace(t *testing.T) {
	pgOnly(t, func(t *testing.T) {
		clk := newManualClock()
		a, b := twoNodes(t, clk)
		const runs = 20
		ids := make([]string, runs)
		for i := range ids {
			ids[i] = mustBegin(t, a, RunMeta{Kind: "exec"}).ID()
		}
		clk.Advance(time.Minute)
		for _, id := range ids {
			var wins atomic.Int32
			var wg sync.WaitGroup
			for n := range 6 {
				j, owner := a, "node-a-"+string(rune('0'+n))
				if n%2 == 1 {
					j, owner = b, "node-b-"+string(rune('0'+n))
				}
				wg.Go(func() {
					ok, err := j.Claim(id, owner, 0)
					if err != nil {
						t.Error(err)
					}
					if ok {
						wins.Add(1)
					}
				})
			}
			wg.Wait()
			if wins.Load() != 1 {
				t.Fatalf("run %s: %d nodes won the claim, want 1", id, wins.Load())
			}
		}
	})
}

// Run ids of two nodes never collide: a new run's id is checked and taken
// in the same commit; an explicit id taken on another node is refused.
func TestRunIDsAcrossNodes(t *testing.T) {
	pgOnly(t, func(t *testing.T) {
		clk := newManualClock()
		a, b := twoNodes(t, clk)
		mustBegin(t, a, RunMeta{ID: "shared-id", Kind: "exec"})
		if _, err := b.Begin(RunMeta{ID: "shared-id", Kind: "exec"}); err == nil {
			t.Fatal("b began a run with an id a has")
		}
		// The commit itself refuses a taken id (two nodes checking at once
		// both see it free).
		err := b.putMetaWith(RunMeta{ID: "shared-id", Kind: "exec", Status: StatusRunning}, &write{create: true, claim: true}, true)
		if !errors.Is(err, errRunExists) {
			t.Fatalf("creating a taken id: %v, want errRunExists", err)
		}
		if m, _ := a.Get("shared-id"); m.Owner != "node-a" {
			t.Fatalf("the refused create changed the run: owner %q", m.Owner)
		}
		// Many runs begun at once on both nodes, at one clock reading: all
		// distinct, all kept.
		var wg sync.WaitGroup
		got := make([]string, 200)
		for i := range got {
			j := a
			if i%2 == 1 {
				j = b
			}
			wg.Go(func() {
				r, err := j.Begin(RunMeta{Kind: "exec"})
				if err != nil {
					t.Error(err)
					return
				}
				got[i] = r.ID()
			})
		}
		wg.Wait()
		seen := map[string]bool{}
		for _, id := range got {
			if seen[id] {
				t.Fatalf("id %s given twice", id)
			}
			seen[id] = true
		}
		if runs, _ := b.Runs(); len(runs) != len(got)+1 {
			t.Fatalf("%d runs kept, want %d", len(runs), len(got)+1)
		}
	})
}

// A live Journal renews its claims by itself (every third of the lease),
// and stops when closed.
func TestRenewerRenews(t *testing.T) {
	pgOnly(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "journal.db")
		j := openAt(t, path, Options{Owner: "renewing", Lease: 90 * time.Millisecond})
		r := mustBegin(t, j, RunMeta{Kind: "exec"})
		first, err := j.Get(r.ID())
		if err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "the claim renewed", func() bool {
			m, err := j.Get(r.ID())
			return err == nil && m.LeaseUntil.After(first.LeaseUntil)
		})
		if err := r.End(StatusOK, nil, nil); err != nil {
			t.Fatal(err)
		}
		if held := j.heldRuns(); len(held) != 0 {
			t.Fatalf("an ended run is still held: %v", held)
		}
	})
}

// A takeover while the old holder is still writing: every call the old
// holder saw committed (SyncEach) is in what the new holder resumes from,
// and nothing the old holder writes lands after the takeover.
func TestTakeoverWhileWriting(t *testing.T) {
	pgOnly(t, func(t *testing.T) {
		clk := newManualClock()
		path := filepath.Join(t.TempDir(), "journal.db")
		a := openAt(t, path, Options{Owner: "node-a", Lease: 10 * time.Second, Now: clk.Now, Durability: SyncEach})
		b := openAt(t, path, Options{Owner: "node-b", Lease: 10 * time.Second, Now: clk.Now, Durability: SyncEach})
		run := mustBegin(t, a, RunMeta{Kind: "exec"})
		h := run.Middleware()(echoDevices().host())
		var acked atomic.Int64
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			for seq := uint64(1); seq <= 5000; seq++ {
				if _, err := h.Do(context.Background(), call(seq, "clock", "now", "")); err != nil {
					return // fenced off: a lost the run
				}
				acked.Store(int64(seq))
			}
		}()
		for i := 0; acked.Load() < 30; i++ {
			if i == 10000 {
				t.Fatal("a acknowledged too few calls")
			}
			time.Sleep(time.Millisecond)
		}
		clk.Advance(11 * time.Second) // a's claim lapses (it does not renew: no renewer tick this soon)
		rec, err := b.Recover(run.ID())
		if err != nil {
			t.Fatal(err)
		}
		<-stopped
		if acked.Load() == 5000 {
			t.Fatal("a wrote every call: the takeover fenced nothing")
		}
		have := mustCount(t, b, run.ID())
		if int64(have) < acked.Load() {
			t.Fatalf("%d calls acknowledged to a, %d in the journal", acked.Load(), have)
		}
		if have != len(rec.entries) {
			t.Fatalf("b resumed from %d calls, but %d are in the journal now: a wrote after the takeover", len(rec.entries), have)
		}
	})
}
