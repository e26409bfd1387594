package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentos-run/agentos/capability"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/asynkron/protoactor-go/actor"
)

// BenchmarkMessages is the reference kernel's "two-process round trip":
// two processes bounce one message back and forth; each op is one message
// (so a round trip is two ops).
//
//	go test -run '^$' -bench Messages -count 6 ./actors/kernel/
func BenchmarkMessages(b *testing.B) {
	k := newKernel(b, kernel.Options{Logger: quiet})
	n := b.N
	done := make(chan struct{})
	pong := spawn(b, k, func(ctx context.Context, p *kernel.Process) error {
		for {
			m, err := p.Recv(ctx)
			if err != nil {
				return nil
			}
			if err := p.Send(m.From, m.Body); err != nil {
				return nil
			}
		}
	}, kernel.SpawnOptions{})
	b.ReportAllocs()
	b.ResetTimer()
	spawn(b, k, func(ctx context.Context, p *kernel.Process) error {
		defer close(done)
		for i := 0; i < n; i += 2 {
			if err := p.Send(pong.PID(), i); err != nil {
				return err
			}
			if _, err := p.Recv(ctx); err != nil {
				return err
			}
		}
		return nil
	}, kernel.SpawnOptions{})
	<-done
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkSpawnExit is the reference kernel's spawn+exit: a parent
// (trapping exits) spawns a linked child that returns at once and waits for
// its Down before the next; each op is one spawn and one exit seen by the
// parent.
//
//	go test -run '^$' -bench SpawnExit -count 6 ./actors/kernel/
func BenchmarkSpawnExit(b *testing.B) {
	k := newKernel(b, kernel.Options{Logger: quiet})
	nop := func(context.Context, *kernel.Process) error { return nil }
	done := make(chan error, 1)
	n := b.N
	b.ReportAllocs()
	b.ResetTimer()
	spawn(b, k, func(ctx context.Context, p *kernel.Process) error {
		p.TrapExits(true)
		var err error
		defer func() { done <- err }()
		for i := 0; i < n; i++ {
			if _, err = p.Spawn(nop, kernel.SpawnOptions{Link: true}); err != nil {
				return err
			}
			var m kernel.Message
			if m, err = p.Recv(ctx); err != nil {
				return err
			}
			if _, ok := m.Body.(*kernel.Down); !ok {
				err = fmt.Errorf("got %T, want *Down", m.Body)
				return err
			}
		}
		return nil
	}, kernel.SpawnOptions{Grants: []capability.Grant{{Right: capability.Spawn}}})
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "spawns/s")
}

// BenchmarkRestarts is the reference kernel's supervisor restarts: a
// one_for_one supervisor process restarts a child that fails as soon as it
// starts; each op is one restart (failure seen, child spawned again).
//
//	go test -run '^$' -bench Restarts -count 6 ./actors/kernel/
func BenchmarkRestarts(b *testing.B) {
	k := newKernel(b, kernel.Options{Logger: quiet})
	n := int64(b.N)
	var starts atomic.Int64
	done := make(chan struct{})
	fail := errors.New("fail")
	child := func(ctx context.Context, _ *kernel.Process) error {
		switch s := starts.Add(1); {
		case s <= n:
			return fail
		case s == n+1:
			close(done)
		}
		<-ctx.Done()
		return nil
	}
	b.ReportAllocs()
	b.ResetTimer()
	spawn(b, k, kernel.Supervise(kernel.SupervisorSpec{
		Intensity: b.N + 1, Period: time.Hour,
		Children: []kernel.ChildSpec{{Name: "crashy", Main: child}},
	}), kernel.SpawnOptions{Grants: []capability.Grant{{Right: capability.Spawn}}})
	<-done
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "restarts/s")
}

// BenchmarkActorMessages is BenchmarkMessages between two protoactor
// actors instead of two kernel processes: why processes are not actors.
//
//	go test -run '^$' -bench 'Messages' -count 6 ./actors/kernel/
func BenchmarkActorMessages(b *testing.B) {
	sys := system.New(system.Options{Logger: quiet})
	defer sys.Shutdown(0)
	pong := sys.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*int); ok {
			c.Send(c.Sender(), m)
		}
	}))
	n := b.N
	done := make(chan struct{})
	ping := sys.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*int); ok {
			if *m += 2; *m >= n {
				close(done)
				return
			}
			c.Request(pong, m)
		}
	}))
	b.ReportAllocs()
	b.ResetTimer()
	start := 0
	sys.Root().Send(ping, &start)
	<-done
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkClientSend is Send through the kernel actor: a kernelclient.Client
// request (protobuf message, future, reply) delivering a JSON body to a
// process that receives it; each op is one message delivered and
// acknowledged by the kernel actor. For the record: what a message from another actor (or,
// later, another node) costs next to BenchmarkMessages.
//
//	go test -run '^$' -bench ClientSend -count 6 ./actors/kernel/
func BenchmarkClientSend(b *testing.B) {
	k := newKernel(b, kernel.Options{Logger: quiet})
	c, _ := startKernelActor(b, k)
	p := spawn(b, k, func(ctx context.Context, p *kernel.Process) error {
		for {
			if _, err := p.Recv(ctx); err != nil {
				return nil
			}
		}
	}, kernel.SpawnOptions{})
	ctx := context.Background()
	body := []byte(`{"n":1}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.Send(ctx, p.PID(), body); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
