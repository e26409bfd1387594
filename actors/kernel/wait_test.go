package kernel_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentos-run/agentos/actors/kernel"
)

// exit closes p.exited (Done/Wait) before it removes the process from the
// table, frees its name, revokes its tokens and closes its account. Code
// that waits for a process and then reuses its name (or relies on its
// revocation or its freed children slot) sees the dead process still there.
func TestWaitReturnsAfterCleanup(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	for i := range 20000 {
		name := fmt.Sprintf("job-%d", i)
		go1 := make(chan struct{})
		p := spawn(t, k, func(context.Context, *kernel.Process) error { <-go1; return nil }, kernel.SpawnOptions{Name: name})
		close(go1)
		for spin := true; spin; { // poll Done without sleeping, as a busy caller would
			select {
			case <-p.Done():
				spin = false
			default:
			}
		}
		if pid, ok := k.Lookup(name); ok {
			t.Fatalf("iteration %d: Done is closed but %q still names %v (alive in the table: %v)", i, name, pid, k.Process(pid) != nil)
		}
	}
}
