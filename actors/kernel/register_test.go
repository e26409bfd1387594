package kernel_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentos-run/agentos/actors/kernel"
)

// register (kernel.go) checks p.alive() before taking k.mu and never
// re-checks p.dead under p.mu. If exit runs in between, exit sees the old
// (empty) name and clears nothing, then register installs the new name for
// a dead PID: Register returns nil and the name points at a dead process
// forever (ErrNameTaken for everyone after).
func TestRegisterNeverNamesADeadProcess(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	const n = 50000
	for i := range n {
		p := spawn(t, k, block, kernel.SpawnOptions{})
		name := fmt.Sprintf("svc-%d", i)
		var wg sync.WaitGroup
		var ready atomic.Int32
		barrier := func() { // both goroutines running in parallel before racing
			ready.Add(1)
			for ready.Load() < 2 {
				runtime.Gosched()
			}
		}
		wg.Add(2)
		go func() { defer wg.Done(); barrier(); _ = p.Register(name) }()
		go func() { defer wg.Done(); barrier(); _ = k.Kill(p.PID(), "race") }()
		wg.Wait()
		if pid, ok := k.Lookup(name); ok && k.Process(pid) == nil {
			t.Fatalf("iteration %d: name %q points at dead process %v", i, name, pid)
		}
	}
}
