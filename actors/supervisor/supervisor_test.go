package supervisor

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentos-run/agentos/internal/testutil"
	"github.com/asynkron/protoactor-go/actor"
)

// starts counts the Started messages of each test child: its first start
// plus every restart.
type starts struct {
	mu sync.Mutex
	n  map[string]*atomic.Int64
}

func (s *starts) of(name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[name] == nil {
		s.n[name] = &atomic.Int64{}
	}
	return s.n[name].Load()
}

func (s *starts) inc(name string) {
	s.mu.Lock()
	if s.n[name] == nil {
		s.n[name] = &atomic.Int64{}
	}
	c := s.n[name]
	s.mu.Unlock()
	c.Add(1)
}

// worker is a test child: it counts its starts and panics on "boom".
type worker struct {
	name string
	st   *starts
}

func (w *worker) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		w.st.inc(w.name)
	case string:
		if m == "boom" {
			panic("boom in " + w.name)
		}
	}
}

func workers(st *starts, restart map[string]Restart, names ...string) []ChildSpec {
	out := make([]ChildSpec, len(names))
	for i, n := range names {
		out[i] = ChildSpec{Name: n, Restart: restart[n], Props: actor.PropsFromProducer(func() actor.Actor { return &worker{name: n, st: st} })}
	}
	return out
}

func quietSystem(t *testing.T) *actor.ActorSystem {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	t.Cleanup(sys.Shutdown)
	return sys
}

// start spawns a supervisor for spec and returns it with its children's PIDs.
func start(t *testing.T, sys *actor.ActorSystem, spec Spec) (*actor.PID, map[string]*actor.PID) {
	t.Helper()
	props, err := Props(spec)
	if err != nil {
		t.Fatal(err)
	}
	pid := sys.Root.Spawn(props)
	t.Cleanup(func() { sys.Root.StopFuture(pid).Wait() }) // Shutdown stops no actor: stop the tree ourselves
	res, err := sys.Root.RequestFuture(pid, &WhichChildren{}, time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	kids := map[string]*actor.PID{}
	for i, n := range res.(*Children).Names {
		kids[n] = res.(*Children).PIDs[i]
	}
	return pid, kids
}

// events collects supervision events safely.
type events struct {
	mu sync.Mutex
	ev []Event
}

func (e *events) add(ev Event) { e.mu.Lock(); e.ev = append(e.ev, ev); e.mu.Unlock() }
func (e *events) all() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Event(nil), e.ev...)
}

func TestStrategiesRestartTheRightChildren(t *testing.T) {
	for _, tc := range []struct {
		strategy Strategy
		want     map[string]int64 // starts after one failure of b
	}{
		{OneForOne, map[string]int64{"a": 1, "b": 2, "c": 1}},
		{OneForAll, map[string]int64{"a": 2, "b": 2, "c": 2}},
		{RestForOne, map[string]int64{"a": 1, "b": 2, "c": 2}},
	} {
		t.Run(tc.strategy.String(), func(t *testing.T) {
			sys := quietSystem(t)
			st := &starts{n: map[string]*atomic.Int64{}}
			var ev events
			_, kids := start(t, sys, Spec{Strategy: tc.strategy, Children: workers(st, nil, "a", "b", "c"), OnEvent: ev.add})
			testutil.Eventually(t, 5*time.Second, "all started", func() bool { return st.of("a") == 1 && st.of("b") == 1 && st.of("c") == 1 })
			sys.Root.Send(kids["b"], "boom")
			testutil.Eventually(t, 5*time.Second, "restarts", func() bool {
				for n, w := range tc.want {
					if st.of(n) != w {
						return false
					}
				}
				return true
			})
			time.Sleep(20 * time.Millisecond) // nothing else restarts afterwards
			for n, w := range tc.want {
				if st.of(n) != w {
					t.Fatalf("%s started %d times, want %d", n, st.of(n), w)
				}
			}
			if e := ev.all(); len(e) != 1 || e[0].Action != ActionRestart || e[0].Failed != "b" {
				t.Fatalf("events %+v", e)
			}
		})
	}
}

func TestTemporaryChildrenAreNotRestarted(t *testing.T) {
	sys := quietSystem(t)
	st := &starts{n: map[string]*atomic.Int64{}}
	sup, kids := start(t, sys, Spec{Strategy: OneForOne, Children: workers(st, map[string]Restart{"tmp": Temporary}, "perm", "tmp")})
	testutil.Eventually(t, 5*time.Second, "started", func() bool { return st.of("tmp") == 1 })
	sys.Root.Send(kids["tmp"], "boom")
	testutil.Eventually(t, 5*time.Second, "tmp gone", func() bool {
		res, err := sys.Root.RequestFuture(sup, &WhichChildren{}, time.Second).Result()
		return err == nil && len(res.(*Children).Names) == 1 && res.(*Children).Names[0] == "perm"
	})
	if st.of("tmp") != 1 {
		t.Fatalf("a temporary child was restarted")
	}
}

func TestIntensityExceededEscalates(t *testing.T) {
	sys := quietSystem(t)
	st := &starts{n: map[string]*atomic.Int64{}}
	var ev events
	_, kids := start(t, sys, Spec{Strategy: OneForOne, Intensity: 2, Period: time.Minute, Children: workers(st, nil, "a"), OnEvent: ev.add})
	for i := 1; i <= 3; i++ {
		testutil.Eventually(t, 5*time.Second, "a running", func() bool { return st.of("a") == int64(i) })
		sys.Root.Send(kids["a"], "boom")
	}
	testutil.Eventually(t, 5*time.Second, "escalation", func() bool {
		e := ev.all()
		return len(e) == 3 && e[2].Action == ActionEscalate
	})
	e := ev.all()
	if e[0].Restarts != 1 || e[1].Restarts != 2 || e[2].Restarts != 3 {
		t.Fatalf("restart counts %+v", e)
	}
}

func TestBackoffGrowsExponentially(t *testing.T) {
	b := Backoff{Initial: 10 * time.Millisecond, Max: 70 * time.Millisecond}
	var got []time.Duration
	for n := 1; n <= 5; n++ {
		got = append(got, b.Delay(n))
	}
	want := []time.Duration{10, 20, 40, 70, 70}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("delays %v", got)
		}
	}
	sys := quietSystem(t)
	st := &starts{n: map[string]*atomic.Int64{}}
	var ev events
	_, kids := start(t, sys, Spec{Strategy: OneForOne, Intensity: 10, Period: time.Minute, Backoff: b, Children: workers(st, nil, "a"), OnEvent: ev.add})
	for i := 1; i <= 3; i++ {
		testutil.Eventually(t, 5*time.Second, "a running", func() bool { return st.of("a") == int64(i) })
		sys.Root.Send(kids["a"], "boom")
	}
	testutil.Eventually(t, 5*time.Second, "third restart", func() bool { return st.of("a") == 4 })
	e := ev.all()
	if len(e) != 3 || e[0].Delay != 10*time.Millisecond || e[1].Delay != 20*time.Millisecond || e[2].Delay != 40*time.Millisecond {
		t.Fatalf("events %+v", e)
	}
}

func TestSpecErrors(t *testing.T) {
	if _, err := Props(Spec{Children: []ChildSpec{{Name: "", Props: actor.PropsFromFunc(func(actor.Context) {})}}}); err == nil {
		t.Fatal("a child without a name was accepted")
	}
	p := actor.PropsFromFunc(func(actor.Context) {})
	if _, err := Props(Spec{Children: []ChildSpec{{Name: "x", Props: p}, {Name: "x", Props: p}}}); err == nil {
		t.Fatal("two children with one name were accepted")
	}
}

// lifecycle is a test child that records whether it ever ran Started
// again after its Stopped (a "zombie": an actor that is out of the process
// registry and out of its supervisor's tree, yet alive), tells failing
// when it is about to panic, and panics on "boom".
type lifecycle struct {
	starts, stopped, zombie *atomic.Int64
	failing                 chan<- struct{}
}

func (l *lifecycle) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		l.starts.Add(1)
		if l.stopped.Load() > 0 {
			l.zombie.Add(1)
		}
	case *actor.Stopped:
		l.stopped.Add(1)
	case string:
		if m == "boom" {
			if l.failing != nil {
				l.failing <- struct{}{}
			}
			panic("boom")
		}
	}
}

type lifecycleCounts struct{ starts, stopped, zombie atomic.Int64 }

func (c *lifecycleCounts) props(failing chan<- struct{}) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &lifecycle{starts: &c.starts, stopped: &c.stopped, zombie: &c.zombie, failing: failing}
	})
}

// A failure that reaches the supervisor after it began stopping MUST NOT
// restart the child: protoactor's Restart resurrects an actor that has
// already processed its Stop.
func TestNoRestartWhileStopping(t *testing.T) {
	sys := quietSystem(t)
	var a, b lifecycleCounts
	entered, gate := make(chan struct{}), make(chan struct{})
	bFailing := make(chan struct{}, 1)
	var once sync.Once
	props, err := Props(Spec{
		Strategy: OneForOne, Intensity: 10, Period: time.Minute,
		Children: []ChildSpec{{Name: "a", Props: a.props(nil)}, {Name: "b", Props: b.props(bFailing)}},
		// The first decision (a's restart) holds the supervisor's
		// goroutine until the stop and b's failure are queued behind it.
		OnEvent: func(Event) { once.Do(func() { close(entered); <-gate }) },
	})
	if err != nil {
		t.Fatal(err)
	}
	sup := sys.Root.Spawn(props)
	res, err := sys.Root.RequestFuture(sup, &WhichChildren{}, time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	kids := res.(*Children).PIDs
	// The children's processes, kept to reach their mailboxes once they
	// are out of the registry.
	procs := make([]actor.Process, len(kids))
	for i, k := range kids {
		if procs[i], _ = sys.ProcessRegistry.GetLocal(k.Id); procs[i] == nil {
			t.Fatalf("child %s is not in the registry", k)
		}
	}
	sys.Root.Send(kids[0], "boom") // a fails: the supervisor blocks in OnEvent
	<-entered
	stopped := sys.Root.StopFuture(sup) // queued: Stop
	sys.Root.Send(kids[1], "boom")      // queued after it: b's Failure
	<-bFailing
	time.Sleep(20 * time.Millisecond) // let b's panic post its Failure (ordering only, no timing assertion)
	close(gate)
	if err := stopped.Wait(); err != nil {
		t.Fatal(err)
	}
	// Whatever the supervisor told its children (a restart), it posted
	// before it stopped: a Watch posted to each child's mailbox now is
	// handled after it. A stopped child answers the Watch with Terminated
	// at once; a zombie (alive again) would have counted itself first, and
	// would not answer.
	terminated := make(chan struct{}, len(kids))
	watcher := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*actor.Terminated); ok {
			terminated <- struct{}{}
		}
	}))
	defer sys.Root.Stop(watcher)
	for i, p := range procs {
		p.SendSystemMessage(kids[i], &actor.Watch{Watcher: watcher})
	}
	for range kids {
		select {
		case <-terminated:
		case <-time.After(5 * time.Second): // a zombie holds the Watch
		}
	}
	if a.zombie.Load() != 0 || b.zombie.Load() != 0 {
		t.Fatalf("a child ran Started after its Stopped (a: %d, b: %d)", a.zombie.Load(), b.zombie.Load())
	}
}

// A delayed (Backoff) restart MUST NOT outlive the supervisor incarnation
// that decided it: children are respawned under the same names, so the
// stale restart would hit a new child that never failed.
func TestBackoffRestartDoesNotOutliveTheSupervisor(t *testing.T) {
	sys := quietSystem(t)
	var a, b lifecycleCounts
	var ev events
	_, kids := start(t, sys, Spec{
		Strategy: OneForOne, Intensity: 1, Period: time.Minute,
		Backoff:  Backoff{Initial: 100 * time.Millisecond},
		Children: []ChildSpec{{Name: "a", Props: a.props(nil)}, {Name: "b", Props: b.props(nil)}},
		OnEvent:  ev.add,
	})
	sys.Root.Send(kids["a"], "boom") // restart of a in 100 ms
	testutil.Eventually(t, 5*time.Second, "a's restart decided", func() bool { return len(ev.all()) == 1 })
	sys.Root.Send(kids["b"], "boom") // second restart within the period: escalate
	// The root guardian restarts the supervisor, which starts a and b again.
	testutil.Eventually(t, 5*time.Second, "the supervisor restarted", func() bool { return a.starts.Load() == 2 && b.starts.Load() == 2 })
	time.Sleep(200 * time.Millisecond) // past the backoff
	if n := a.starts.Load(); n != 2 {
		t.Fatalf("a started %d times, want 2 (first start, the supervisor's restart): the stale backoff restarted the new a", n)
	}
}
