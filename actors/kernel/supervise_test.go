package kernel_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/actors/supervisor"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/testutil"
)

var spawnRight = []capability.Grant{{Right: capability.Spawn}}

// counted is a child that counts its starts and fails when told to.
type counted struct {
	starts atomic.Int32
	fail   chan struct{}
}

func newCounted() *counted { return &counted{fail: make(chan struct{}, 16)} }

func (c *counted) main(ctx context.Context, _ *kernel.Process) error {
	c.starts.Add(1)
	select {
	case <-c.fail:
		return errors.New("told to fail")
	case <-ctx.Done():
		return nil
	}
}

type eventLog struct {
	mu  sync.Mutex
	evs []supervisor.Event
}

func (l *eventLog) add(e supervisor.Event) { l.mu.Lock(); l.evs = append(l.evs, e); l.mu.Unlock() }
func (l *eventLog) len() int               { l.mu.Lock(); defer l.mu.Unlock(); return len(l.evs) }
func (l *eventLog) get() []supervisor.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.evs)
}

func TestSuperviseStrategies(t *testing.T) {
	tests := []struct {
		strategy supervisor.Strategy
		want     [3]int32 // starts of a, b, c after b fails once
	}{
		{supervisor.OneForOne, [3]int32{1, 2, 1}},
		{supervisor.OneForAll, [3]int32{2, 2, 2}},
		{supervisor.RestForOne, [3]int32{1, 2, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.strategy.String(), func(t *testing.T) {
			k := newKernel(t, kernel.Options{Logger: quiet})
			a, b, c := newCounted(), newCounted(), newCounted()
			var log eventLog
			spawn(t, k, kernel.Supervise(kernel.SupervisorSpec{
				Strategy: tc.strategy, Intensity: 5, Period: time.Minute, OnEvent: log.add,
				Children: []kernel.ChildSpec{{Name: "a", Main: a.main}, {Name: "b", Main: b.main}, {Name: "c", Main: c.main}},
			}), kernel.SpawnOptions{Grants: spawnRight})
			testutil.Eventually(t, 10*time.Second, "children started", func() bool { return a.starts.Load()+b.starts.Load()+c.starts.Load() == 3 })
			b.fail <- struct{}{}
			testutil.Eventually(t, 10*time.Second, "the restart", func() bool {
				return a.starts.Load()+b.starts.Load()+c.starts.Load() == tc.want[0]+tc.want[1]+tc.want[2]
			})
			time.Sleep(10 * time.Millisecond) // nothing more may start
			if got := [3]int32{a.starts.Load(), b.starts.Load(), c.starts.Load()}; got != tc.want {
				t.Fatalf("starts = %v, want %v", got, tc.want)
			}
			if evs := log.get(); len(evs) != 1 || evs[0].Action != supervisor.ActionRestart || evs[0].Failed != "b" {
				t.Fatalf("events = %+v", evs)
			}
		})
	}
}

// One restart too many: the supervisor ends with a fault, which its
// monitor (its own supervisor) sees.
func TestSuperviseIntensityEscalates(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	crash := func(context.Context, *kernel.Process) error { return errors.New("crash") }
	watcher := spawn(t, k, block, kernel.SpawnOptions{})
	var log eventLog
	sup := spawn(t, k, func(ctx context.Context, p *kernel.Process) error {
		if _, err := p.Recv(ctx); err != nil { // wait to be monitored
			return err
		}
		return kernel.Supervise(kernel.SupervisorSpec{Intensity: 3, Period: time.Minute, OnEvent: log.add, Children: []kernel.ChildSpec{{Name: "crashy", Main: crash}}})(ctx, p)
	}, kernel.SpawnOptions{Grants: spawnRight})
	if err := watcher.Monitor(sup.PID()); err != nil {
		t.Fatal(err)
	}
	_ = k.Send(sup.PID(), "go")
	d := recvDown(t, ctx, watcher)
	if d.Reason.Kind != kernel.Fault || !strings.Contains(d.Reason.Detail, "4 restarts") {
		t.Fatalf("supervisor ended with %v", d.Reason)
	}
	evs := log.get()
	if len(evs) != 4 || evs[3].Action != supervisor.ActionEscalate {
		t.Fatalf("events = %+v, want 3 restarts then escalate", evs)
	}
}

func TestSuperviseBackoffGrows(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	crash := func(context.Context, *kernel.Process) error { return errors.New("crash") }
	var log eventLog
	spawn(t, k, kernel.Supervise(kernel.SupervisorSpec{
		Intensity: 4, Period: time.Minute, OnEvent: log.add,
		Backoff:  supervisor.Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond, Factor: 2},
		Children: []kernel.ChildSpec{{Name: "crashy", Main: crash}},
	}), kernel.SpawnOptions{Grants: spawnRight})
	testutil.Eventually(t, 10*time.Second, "escalation", func() bool { return log.len() == 5 })
	var delays []time.Duration
	for _, e := range log.get()[:4] {
		delays = append(delays, e.Delay)
	}
	if want := []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 4 * time.Millisecond}; !slices.Equal(delays, want) {
		t.Fatalf("delays = %v, want %v (doubling, capped)", delays, want)
	}
}

// Temporary children are not restarted; transient ones only after a
// failure; a Term stops every child and ends the supervisor normally.
func TestSuperviseRestartTypes(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	tmp, tr := newCounted(), newCounted()
	var normal atomic.Int32
	var log eventLog
	sup := spawn(t, k, kernel.Supervise(kernel.SupervisorSpec{
		Intensity: 5, Period: time.Minute, OnEvent: log.add,
		Children: []kernel.ChildSpec{
			{Name: "tmp", Main: tmp.main, Restart: supervisor.Temporary},
			{Name: "transient", Main: tr.main, Restart: supervisor.Transient},
			{Name: "done", Main: func(context.Context, *kernel.Process) error { normal.Add(1); return nil }, Restart: supervisor.Transient},
		},
	}), kernel.SpawnOptions{Grants: spawnRight})
	testutil.Eventually(t, 10*time.Second, "start", func() bool { return tmp.starts.Load() == 1 && tr.starts.Load() == 1 && normal.Load() == 1 })
	tmp.fail <- struct{}{}
	tr.fail <- struct{}{}
	testutil.Eventually(t, 10*time.Second, "transient restart", func() bool { return tr.starts.Load() == 2 })
	time.Sleep(10 * time.Millisecond)
	if tmp.starts.Load() != 1 || normal.Load() != 1 {
		t.Fatalf("temporary started %d times, normal transient %d: want 1 and 1", tmp.starts.Load(), normal.Load())
	}
	if err := k.Terminate(sup.PID(), 0); err != nil {
		t.Fatal(err)
	}
	if r := wait(t, sup); r.Kind != kernel.Normal {
		t.Fatalf("terminated supervisor: %v", r)
	}
	testutil.Eventually(t, 10*time.Second, "children stopped", func() bool { return len(k.PS()) == 0 })
}
