package kernel_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/internal/testutil"
)

// Process.wake is one buffered slot shared by every waiter (Recv and each
// gate). Continue puts one token in it, so when two goroutines of a stopped
// process wait (two parallel kernel tool calls, or Main in Recv plus a tool
// call) only the first is woken; the other waits forever although the
// process is running again.
func TestContinueWakesEveryWaiter(t *testing.T) {
	t.Run("two kernel calls", func(t *testing.T) {
		k := newKernel(t, kernel.Options{Logger: quiet})
		p := spawn(t, k, block, kernel.SpawnOptions{Grants: spawnRight})
		if err := k.Stop(p.PID()); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 2)
		for range 2 { // e.g. two parallel tool calls; Spawn passes the same gate
			go func() {
				_, err := p.Spawn(func(context.Context, *kernel.Process) error { return nil }, kernel.SpawnOptions{})
				done <- err
			}()
		}
		testutil.Eventually(t, 10*time.Second, "both calls parked in the gate", func() bool { return kernel.GateWaiters(p) == 2 })
		if err := k.Continue(p.PID()); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(2 * time.Second):
				t.Fatalf("call %d still blocked 2s after Continue (lost wake-up)", i+1)
			}
		}
	})
	// Main parked in Recv before Stop; a message arrives while stopped.
	t.Run("recv parked before stop", func(t *testing.T) {
		k := newKernel(t, kernel.Options{Logger: quiet})
		got := make(chan any, 1)
		p := spawn(t, k, func(ctx context.Context, p *kernel.Process) error {
			m, err := p.Recv(ctx)
			if err != nil {
				return err
			}
			got <- m.Body
			return nil
		}, kernel.SpawnOptions{})
		testutil.Eventually(t, 10*time.Second, "Main parked in Recv", func() bool { return p.Info().Status == kernel.Waiting })
		if err := k.Stop(p.PID()); err != nil {
			t.Fatal(err)
		}
		if err := k.Send(p.PID(), "hello"); err != nil {
			t.Fatal(err)
		}
		if err := k.Continue(p.PID()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got:
		case <-time.After(2 * time.Second):
			t.Fatalf("after Continue the message stays in the mailbox (%d) and Recv never returns", p.Mailbox())
		}
	})
	t.Run("recv and a kernel call", func(t *testing.T) {
		k := newKernel(t, kernel.Options{Logger: quiet})
		got := make(chan any, 1)
		p := spawn(t, k, func(ctx context.Context, p *kernel.Process) error {
			m, err := p.Recv(ctx)
			if err != nil {
				return err
			}
			got <- m.Body
			<-ctx.Done()
			return nil
		}, kernel.SpawnOptions{Grants: spawnRight})
		testutil.Eventually(t, 10*time.Second, "Main parked in Recv", func() bool { return p.Info().Status == kernel.Waiting })
		if err := k.Stop(p.PID()); err != nil {
			t.Fatal(err)
		}
		if err := k.Send(p.PID(), "hello"); err != nil {
			t.Fatal(err)
		}
		spawned := make(chan error, 1)
		go func() {
			_, err := p.Spawn(func(context.Context, *kernel.Process) error { return nil }, kernel.SpawnOptions{})
			spawned <- err
		}()
		testutil.Eventually(t, 10*time.Second, "the call parked in the gate", func() bool { return kernel.GateWaiters(p) == 1 })
		if err := k.Continue(p.PID()); err != nil {
			t.Fatal(err)
		}
		timeout := time.After(2 * time.Second)
		for range 2 {
			select {
			case <-got:
			case err := <-spawned:
				if err != nil {
					t.Fatal(err)
				}
			case <-timeout:
				t.Fatalf("after Continue: mailbox=%d, one waiter still blocked (lost wake-up)", p.Mailbox())
			}
		}
	})
}

// gate sets waiting=true while stopped and never clears it, so after a
// stopped process's kernel call resumes, ps reports it "waiting" (blocked in
// Recv) although it is running and has never called Recv.
func TestStatusIsRunningAfterTheGate(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	p := spawn(t, k, block, kernel.SpawnOptions{Grants: spawnRight})
	if err := k.Stop(p.PID()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.Spawn(func(context.Context, *kernel.Process) error { return nil }, kernel.SpawnOptions{})
		done <- err
	}()
	testutil.Eventually(t, 10*time.Second, "the call parked in the gate", func() bool { return kernel.GateWaiters(p) == 1 })
	if err := k.Continue(p.PID()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := p.Info().Status; st != kernel.Running {
		t.Fatalf("status after the call resumed = %q, want %q (the process never called Recv)", st, kernel.Running)
	}
}
