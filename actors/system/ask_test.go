package system_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/system"
	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/goleak"
)

// TestAsk: a reply comes back; an actor that never answers gives
// ErrNoReply after the timeout; ctx's end returns at once with ctx's error,
// before and after sending; a ctx deadline shorter than the timeout bounds
// the wait.
func TestAsk(t *testing.T) {
	s := newSystem(t)
	echoPID := s.Spawn(echo)
	silent := s.Spawn(silentProps)
	root := s.Root()

	if res, err := system.Ask(context.Background(), root, echoPID, "ping", 5*time.Second); err != nil || res != "pong" {
		t.Fatalf("echo: %v, %v", res, err)
	}
	if _, err := system.Ask(context.Background(), root, silent, "hi", 50*time.Millisecond); !errors.Is(err, system.ErrNoReply) {
		t.Fatalf("a silent actor: %v, want ErrNoReply", err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := system.Ask(done, root, echoPID, "hi", 5*time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("an ended ctx: %v, want context.Canceled", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }() // ends while Ask waits
	if _, err := system.Ask(ctx, root, silent, "hi", 300*time.Millisecond); !errors.Is(err, context.Canceled) {
		t.Fatalf("ctx cancelled while waiting: %v, want context.Canceled", err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancelShort()
	if _, err := system.Ask(short, root, silent, "hi", time.Hour); !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, system.ErrNoReply) {
		t.Fatalf("a ctx deadline: %v, want the deadline or ErrNoReply", err)
	}
}

// TestAskAbandonedLeavesNothing: an Ask whose ctx ends stops its future, so
// that nothing keeps waiting for the reply until the timeout (a goroutine and a
// timer per abandoned request; goleak found one at the end of
// internal/host's tests under -race in CI).
func TestAskAbandonedLeavesNothing(t *testing.T) {
	s := newSystem(t)
	silent := s.Spawn(silentProps)
	before := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if _, err := system.Ask(ctx, s.Root(), silent, "hi", time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("ctx cancelled while waiting: %v, want context.Canceled", err)
	}
	if err := goleak.Find(before); err != nil {
		t.Errorf("an abandoned Ask left a goroutine waiting for its reply: %v", err)
	}
}

// TestAskCancelRacesReply: a reply that arrives as the Ask's ctx ends,
// which stops the request's future, is a dead letter or the reply, never
// a data race on the future (run under -race: protoactor wrote a reply
// into a future without its lock, third_party/protoactor-go/PATCHES.md).
func TestAskCancelRacesReply(t *testing.T) {
	s := newSystem(t)
	replier := s.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if d, ok := c.Message().(time.Duration); ok {
			time.Sleep(d)
			c.Respond("late")
		}
	}))
	for i := range 300 {
		ctx, cancel := context.WithCancel(context.Background())
		d := time.Duration(i%7) * 20 * time.Microsecond
		go func() { time.Sleep(d); cancel() }()
		if res, err := system.Ask(ctx, s.Root(), replier, time.Duration(i%5)*20*time.Microsecond, time.Minute); err == nil && res != "late" {
			t.Fatalf("reply %v", res)
		}
		cancel()
	}
}

// TestFutureDone: a future's Done channel (agentos's protoactor copy,
// third_party/protoactor-go/PATCHES.md) is open while the request waits
// and closed by its reply, its timeout and a stop, Result then answering
// at once.
func TestFutureDone(t *testing.T) {
	s := newSystem(t)
	echoPID := s.Spawn(echo)
	silent := s.Spawn(silentProps)
	root := s.Root()
	closed := func(f *actor.Future, within time.Duration) bool {
		select {
		case <-f.Done():
			return true
		case <-time.After(within):
			return false
		}
	}

	f := root.RequestFuture(echoPID, "ping", 5*time.Second)
	if !closed(f, 5*time.Second) {
		t.Fatal("Done stayed open after the reply")
	}
	if res, err := f.Result(); err != nil || res != "pong" {
		t.Fatalf("Result after Done: %v, %v", res, err)
	}
	f = root.RequestFuture(silent, "hi", 30*time.Millisecond)
	if closed(f, 5*time.Millisecond) {
		t.Fatal("Done closed before any reply or the timeout")
	}
	if !closed(f, 5*time.Second) {
		t.Fatal("Done stayed open after the timeout")
	}
	if _, err := f.Result(); !errors.Is(err, actor.ErrTimeout) {
		t.Fatalf("Result after the timeout: %v, want actor.ErrTimeout", err)
	}
	f = root.RequestFuture(silent, "hi", time.Hour)
	root.Stop(f.PID())
	if !closed(f, 5*time.Second) {
		t.Fatal("Done stayed open after the future was stopped")
	}
}

// TestAskWaitsWithoutAGoroutine: an Ask whose ctx can end waits for the
// reply and the ctx in one select: no goroutine blocked in Result per
// request (it was one more goroutine and one more wake-up for each request
// of every actor client).
func TestAskWaitsWithoutAGoroutine(t *testing.T) {
	s := newSystem(t)
	gate := make(chan struct{})
	slow := s.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(string); ok {
			<-gate
			c.Respond("late")
		}
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := system.Ask(ctx, s.Root(), slow, "hi", time.Minute)
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(stacks(), "system.Ask(") {
		if time.Now().After(deadline) {
			t.Fatal("the Ask never started waiting")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond) // a helper goroutine would have started by now
	if st := stacks(); strings.Contains(st, "(*Future).Result") {
		t.Errorf("a goroutine is blocked in Future.Result while Ask waits:\n%s", st)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatalf("Ask: %v", err)
	}
}

// stacks returns every goroutine's stack.
func stacks() string {
	b := make([]byte, 1<<20)
	return string(b[:runtime.Stack(b, true)])
}

// newSystem starts an actor system that t shuts down when it ends.
func newSystem(t *testing.T) *system.System {
	t.Helper()
	s := system.New(system.Options{})
	t.Cleanup(func() { _ = s.Shutdown(5 * time.Second) })
	return s
}

// silentProps is an actor that never answers.
var silentProps = actor.PropsFromFunc(func(actor.Context) {})

// A request already in an actor's mailbox when the actor stops is answered
// as a dead letter at once (PATCHES.md 5), as a request to a stopped PID
// is: upstream dropped it without a word, and its asker waited out its
// whole timeout (a node's git actor asking its registry, stopping beside
// it, waited a minute and held the node's Close past its bound).
func TestRequestQueuedAtStopIsADeadLetter(t *testing.T) {
	s := newSystem(t)
	stopping, release := make(chan struct{}), make(chan struct{})
	pid := s.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch c.Message().(type) {
		case *actor.Stopping:
			close(stopping)
			<-release // the request below is queued meanwhile
		case string:
			c.Respond("answered")
		}
	}))
	root := s.Root()
	root.Stop(pid)
	<-stopping
	f := root.RequestFuture(pid, "hi", 30*time.Second)
	close(release)
	select {
	case <-f.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a request queued as its actor stopped had no answer within 5 s (it waits out its 30 s timeout)")
	}
	if res, err := f.Result(); !errors.Is(err, actor.ErrDeadLetter) {
		t.Fatalf("the queued request: %v, %v; want actor.ErrDeadLetter", res, err)
	}
}
