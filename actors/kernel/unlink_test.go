package kernel_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
)

// exit snapshots p's links and monitors under p.mu, then (after cancel,
// table/name cleanup, revocation, account close and the exit event) acts on
// the snapshot without re-checking it. An Unlink (Demonitor) that returns in
// that window has no effect: the partner is still killed (the Down is still
// delivered). The OnEvent hook below only parks exit inside that window so
// the interleaving is deterministic; the scheduler can produce it alone.
func pauseAtExit(t *testing.T) (k *kernel.Kernel, target *atomic.Uint64, parked, resume chan struct{}) {
	target = new(atomic.Uint64)
	parked, resume = make(chan struct{}), make(chan struct{})
	k = newKernel(t, kernel.Options{Logger: quiet, OnEvent: func(e kernel.Event) {
		if e.Kind == kernel.EventExit && uint64(e.PID) == target.Load() {
			close(parked)
			<-resume
		}
	}})
	return k, target, parked, resume
}

// An Unlink that returns while the partner's exit runs (pauseAtExit)
// MUST spare the unlinked process.
func TestUnlinkDuringExitSparesThePartner(t *testing.T) {
	k, target, parked, resume := pauseAtExit(t)
	a := spawn(t, k, block, kernel.SpawnOptions{})
	b := spawn(t, k, block, kernel.SpawnOptions{}) // does not trap exits
	if err := b.Link(a.PID()); err != nil {
		t.Fatal(err)
	}
	target.Store(uint64(a.PID()))
	killed := make(chan struct{})
	go func() { _ = k.Kill(a.PID(), "test"); close(killed) }()
	<-parked
	b.Unlink(a.PID()) // returns: b is no longer linked to a
	close(resume)
	<-killed
	if r, dead := b.Reason(); dead {
		t.Fatalf("b unlinked a before a's exit acted, yet was ended: %v", r)
	}
}

// A Demonitor that returns while the watched process's exit runs
// (pauseAtExit) MUST stop its Down.
func TestDemonitorDuringExitDeliversNoDown(t *testing.T) {
	k, target, parked, resume := pauseAtExit(t)
	a := spawn(t, k, block, kernel.SpawnOptions{})
	w := spawn(t, k, block, kernel.SpawnOptions{})
	if err := w.Monitor(a.PID()); err != nil {
		t.Fatal(err)
	}
	target.Store(uint64(a.PID()))
	killed := make(chan struct{})
	go func() { _ = k.Kill(a.PID(), "test"); close(killed) }()
	<-parked
	w.Demonitor(a.PID())
	close(resume)
	<-killed
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if m, err := w.Recv(ctx); err == nil {
		t.Fatalf("a Down arrived after Demonitor returned: %+v", m.Body)
	}
}
