package kernel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/actors/supervisor"
	"github.com/agentos-run/agentos/internal/testutil"
)

// A supervisor traps exits, and Supervise's loop drops every Down that is
// not from one of its children, including the one from the process it is
// linked to as a child. When an outer supervisor escalates (ends with a
// fault), the inner supervisor ignores its parent's death: it and its
// children keep running, orphaned (and a restarted outer would start a
// second copy of them).
func TestSupervisorDiesWithItsParent(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	leaf := newCounted()
	release := make(chan struct{})
	crash := func(ctx context.Context, _ *kernel.Process) error {
		select {
		case <-release:
			return errors.New("crash")
		case <-ctx.Done():
			return nil
		}
	}
	inner := kernel.Supervise(kernel.SupervisorSpec{Intensity: 5, Period: time.Minute,
		Children: []kernel.ChildSpec{{Name: "leaf", Main: leaf.main}}})
	watcher := spawn(t, k, block, kernel.SpawnOptions{})
	outer := spawn(t, k, func(ctx context.Context, p *kernel.Process) error {
		if _, err := p.Recv(ctx); err != nil { // wait to be monitored
			return err
		}
		return kernel.Supervise(kernel.SupervisorSpec{Intensity: 1, Period: time.Minute,
			Children: []kernel.ChildSpec{
				{Name: "inner", Main: inner, Options: kernel.SpawnOptions{Grants: spawnRight}},
				{Name: "crashy", Main: crash, Restart: supervisor.Permanent},
			}})(ctx, p)
	}, kernel.SpawnOptions{Grants: spawnRight})
	if err := watcher.Monitor(outer.PID()); err != nil {
		t.Fatal(err)
	}
	_ = k.Send(outer.PID(), "go")
	testutil.Eventually(t, 10*time.Second, "the inner supervisor's leaf started", func() bool { return leaf.starts.Load() == 1 })
	close(release)
	if d := recvDown(t, ctx, watcher); d.Reason.Kind != kernel.Fault {
		t.Fatalf("outer supervisor ended with %v, want an escalation fault", d.Reason)
	}
	testutil.Eventually(t, 10*time.Second, "the inner supervisor and its children to end with the outer one (only the watcher may remain)", func() bool {
		return len(k.PS()) <= 1
	})
}
