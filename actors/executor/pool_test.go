package executor

import (
	"context"
	"os/exec"
	"testing"
)

// TestPoolTakesTheWorkerReleasedLast: runs that come one at a time go to
// the same worker (the one released last), not to each idle worker in
// turn; a dead one is skipped; a pool holds no more idle workers than
// its size.
func TestPoolTakesTheWorkerReleasedLast(t *testing.T) {
	p := &pool{slots: make(chan struct{}, 2), max: 2, all: map[*worker]struct{}{}}
	fake := func() *worker { return &worker{cmd: &exec.Cmd{}, stdin: nopStdin{}, exited: make(chan struct{})} }
	w1, w2, w3 := fake(), fake(), fake()
	p.put(w1, true)
	p.put(w2, true)
	for i := range 3 {
		w, err := p.get(context.Background())
		if err != nil || w != w2 {
			t.Fatalf("run %d got worker %p (%v), want the one released last, %p", i, w, err, w2)
		}
		p.release(w, true)
	}
	close(w2.exited) // it died while idle
	if w, err := p.get(context.Background()); err != nil || w != w1 {
		t.Fatalf("after the last one died: got %p (%v), want %p", w, err, w1)
	}
	p.release(w1, true)
	p.put(w3, true)
	p.put(fake(), true) // one more than the pool's size: killed, not kept
	if len(p.idle) != 2 {
		t.Fatalf("%d idle workers in a pool of 2", len(p.idle))
	}
}

type nopStdin struct{}

func (nopStdin) Write(b []byte) (int, error) { return len(b), nil }
func (nopStdin) Close() error                { return nil }
