package system_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/system"
)

// A stop that races a cancellation still sends the cancel message exactly
// once (context.AfterFunc's stop can win that race and drop it); a stop
// before any cancellation sends nothing.
func TestAfterCancel(t *testing.T) {
	for i := range 100000 {
		ctx, cancel := context.WithCancel(context.Background())
		var n atomic.Int32
		stop := system.AfterCancel(ctx, func() { n.Add(1) })
		go cancel()
		<-ctx.Done()
		stop()
		// f started on its own goroutine may not have run yet: wait for it.
		for deadline := time.Now().Add(5 * time.Second); n.Load() == 0 && time.Now().Before(deadline); {
			runtime.Gosched()
		}
		if got := n.Load(); got != 1 {
			t.Fatalf("round %d: the cancel func ran %d times, want once", i, got)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	stop := system.AfterCancel(ctx, func() { n.Add(1) })
	stop()
	cancel()
	if n.Load() != 0 {
		t.Fatal("the cancel func ran after stop, with ctx live at stop")
	}
}
