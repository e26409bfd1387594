package sandbox

// The memory limit: the bootstrap's oom hook and the heap watchdog.

import (
	"runtime/metrics"
	"sync"
	"time"
)

func (r *run) oom(bytes int64, what string) {
	r.abort(errorf(KindMemory, "%s would allocate %d bytes, over the run's %d-byte memory limit", what, bytes, r.lim.MemoryBytes))
}

// watchMemory samples the Go heap every millisecond and stops the run when
// it exceeds the limit (growth since the start when the heap is shared).
//
// It trips only when both figures exceed the limit: the heap's objects
// (current, but garbage counts until it is collected) and the live heap
// (garbage-free, but only as of the last GC, whose cycle may span two runs).
// A bomb grows both; garbage churn or a GC cycle that started in another run
// grows only one. RLIMIT_AS backs this up in workers.
//
// The samples are taken by a timer that re-arms itself, not by a goroutine
// with a ticker: a run shorter than a millisecond (most runs) then starts no
// goroutine for its watch, and so wakes no other thread to run one.
func (r *run) watchMemory(shared bool) (stop func()) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	read := func() (objects, live int64) {
		metrics.Read(sample)
		return int64(sample[0].Value.Uint64()), int64(sample[1].Value.Uint64())
	}
	var baseObjects, baseLive int64
	if shared {
		baseObjects, baseLive = read()
	}
	var (
		mu      sync.Mutex // holds t and stopped; a sample runs under it
		stopped bool
		t       *time.Timer
	)
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(time.Millisecond, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		objects, live := read()
		if objects-baseObjects > r.lim.MemoryBytes && live-baseLive > r.lim.MemoryBytes {
			r.overMemory(objects-baseObjects, live-baseLive)
			return
		}
		t.Reset(time.Millisecond)
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}

// overMemory stops the run whose heap grew over its limit.
func (r *run) overMemory(objects, live int64) {
	over := errorf(KindMemory, "the run's heap grew to %d bytes (%d live), over its %d-byte memory limit", objects, live, r.lim.MemoryBytes)
	if r.reason.Load() == nil {
		r.abort(over)
		return
	}
	// Stopped already (its deadline), but a native built-in that ignores
	// the interrupt is still allocating: a memory bomb. The Bridge hears of
	// it (a worker's parent then reports memory_limit, not timeout).
	if a, ok := r.br.(Aborter); ok && r.reason.Load().Kind != KindMemory {
		a.Aborted(over)
	}
}
