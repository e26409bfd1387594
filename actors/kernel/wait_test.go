package kernel_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/agentos-run/agentos/actors/kernel"
)

// exit closed p.exited (Done/Wait) before it removed the process from the
// table, freed its name, revoked its tokens and closed its account: code
// that waits for a process and then reuses its name (or relies on its
// revocation or its freed children slot) saw the dead process still there.
//
// The exit event is emitted (OnEvent, synchronously) after the cleanup and
// before Done closes: seen from it, the name and the table entry MUST be
// gone already and Done MUST still be open. The check is made on the exit
// path itself, so it holds (or fails) every time, not by a lucky
// interleaving of a busy poll.
func TestWaitReturnsAfterCleanup(t *testing.T) {
	type seen struct{ named, inTable, done bool }
	var (
		k    *kernel.Kernel
		cur  atomic.Pointer[kernel.Process]
		saw  = make(chan seen, 1)
		name = "job"
	)
	k = newKernel(t, kernel.Options{Logger: quiet, OnEvent: func(e kernel.Event) {
		if e.Kind != kernel.EventExit || e.Name != name {
			return
		}
		_, named := k.Lookup(name)
		done := false
		select {
		case <-cur.Load().Done():
			done = true
		default:
		}
		saw <- seen{named: named, inTable: k.Process(e.PID) != nil, done: done}
	}})
	for i := range 3 { // the name is reused each time
		release := make(chan struct{})
		p := spawn(t, k, func(context.Context, *kernel.Process) error { <-release; return nil }, kernel.SpawnOptions{Name: name})
		cur.Store(p)
		close(release)
		s := <-saw
		if s.done || s.named || s.inTable {
			t.Fatalf("iteration %d, at the exit event: Done closed %v, %q still named %v, still in the table %v; want the cleanup done and Done still open", i, s.done, name, s.named, s.inTable)
		}
		<-p.Done()
		if pid, ok := k.Lookup(name); ok {
			t.Fatalf("iteration %d: Done is closed but %q still names %v", i, name, pid)
		}
	}
}
