package supervisor

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// crasher is the benchmark's child: it counts its starts (the first one
// plus one per restart), signals done when the count reaches target, and
// panics on "fail".
type crasher struct {
	started *atomic.Int64
	target  int64
	done    chan struct{}
}

func (c *crasher) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		if c.started.Add(1) == c.target {
			close(c.done)
		}
	case string:
		panic("fail")
	}
}

// BenchmarkRestarts measures how many restarts per second a OneForOne
// supervisor completes for a child that panics on every message.
//
// A restart is counted when the child has run its Started again, so the
// benchmark sends b.N failures and waits until the child has started
// b.N+1 times. It always terminates: the wait is bounded, and an
// escalation or a dead letter (either means some failure will never be
// restarted) ends it at once with b.Fatal.
//
// IMPORTANT (why an earlier version hung): the tree is stopped in a
// closure, never with `defer sys.Root.StopFuture(pid).Wait()`: Go evaluates
// the receiver of a deferred method call at the defer statement, so that
// line stops the supervisor before the first failure is sent, every
// failure is swallowed by the stopped child or becomes a dead letter, and
// a wait for restarts waits forever. The testing package does not guard
// that wait: -timeout's alarm is turned off before benchmarks run.
func BenchmarkRestarts(b *testing.B) {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(quietLogger))
	defer sys.Shutdown()

	var (
		dead     atomic.Int64
		lost     = make(chan struct{})
		lostOnce sync.Once
	)
	sub := sys.EventStream.Subscribe(func(m any) {
		if _, ok := m.(*actor.DeadLetterEvent); ok {
			dead.Add(1)
			lostOnce.Do(func() { close(lost) })
		}
	})
	defer sys.EventStream.Unsubscribe(sub)

	var (
		started   atomic.Int64
		done      = make(chan struct{})
		escalated = make(chan struct{})
		once      sync.Once
	)
	child := &crasher{started: &started, target: int64(b.N) + 1, done: done}
	props, err := Props(Spec{
		Strategy: OneForOne,
		// Intensity far above anything reachable within Period: the
		// benchmark measures restarts, never an escalation. A small
		// Period keeps the supervisor's restart window short.
		Intensity: 1 << 30,
		Period:    time.Millisecond,
		// Backoff zero: restart at once.
		Children: []ChildSpec{{
			Name:  "crasher",
			Props: actor.PropsFromProducer(func() actor.Actor { return child }),
		}},
		OnEvent: func(ev Event) {
			if ev.Action != ActionRestart {
				once.Do(func() { close(escalated) })
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	sup := sys.Root.Spawn(props)
	defer func() {
		// In a closure: see the IMPORTANT note above.
		if err := sys.Root.StopFuture(sup).Wait(); err != nil {
			b.Errorf("stopping the supervisor: %v", err)
		}
	}()
	res, err := sys.Root.RequestFuture(sup, &WhichChildren{}, 5*time.Second).Result()
	if err != nil {
		b.Fatal(err)
	}
	kids, ok := res.(*Children)
	if !ok || len(kids.PIDs) != 1 {
		b.Fatalf("supervisor answered %#v, want one child", res)
	}
	pid := kids.PIDs[0]

	// The child's first Started runs on its own goroutine: wait for it
	// before the clock starts.
	for started.Load() < 1 {
		time.Sleep(50 * time.Microsecond)
	}
	// At least 1000 restarts/s or the benchmark gives up: far below any
	// real figure, so only a lost failure trips it.
	limit := 10*time.Second + time.Duration(b.N)*time.Millisecond
	timeout := time.NewTimer(limit)
	defer timeout.Stop()

	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sys.Root.Send(pid, "fail")
	}
	select {
	case <-done:
	case <-lost:
		b.Fatalf("a failure became a dead letter after %d of %d restarts: the child was not running (was the tree stopped early?)", started.Load()-1, b.N)
	case <-escalated:
		b.Fatalf("the supervisor did not restart the child (stop or escalation) after %d of %d restarts", started.Load()-1, b.N)
	case <-timeout.C:
		b.Fatalf("%d of %d restarts after %v (%d dead letters): a failure was lost", started.Load()-1, b.N, limit, dead.Load())
	}
	b.StopTimer()
	if n := dead.Load(); n > 0 {
		b.Fatalf("%d dead letters: failures were sent to a child that was not running", n)
	}
	if got := started.Load(); got != int64(b.N)+1 {
		b.Fatalf("child started %d times, want %d", got, b.N+1)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "restarts/s")
}

// quietLogger keeps protoactor's per-restart Info lines ("[ACTOR]
// Recovering") out of the measurement and the benchmark output.
func quietLogger(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }
