package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/actors/supervisor"
	"github.com/agentos-run/agentos/capability"
)

// A parent monitors a child that exceeds its quota: the Down says why.
func ExampleKernel_Spawn() {
	k, _ := kernel.New(kernel.Options{Logger: quiet})
	defer k.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	watcher, _ := k.Spawn(func(ctx context.Context, p *kernel.Process) error { <-ctx.Done(); return nil }, kernel.SpawnOptions{Name: "watcher"})
	worker, _ := k.Spawn(func(ctx context.Context, p *kernel.Process) error {
		if _, err := p.Recv(ctx); err != nil { // start once monitored
			return err
		}
		for {
			if err := p.Charge(capability.LLMTokens, 600); err != nil {
				return err
			}
		}
	}, kernel.SpawnOptions{Quota: capability.Limits{capability.LLMTokens: 1000}})
	_ = watcher.Monitor(worker.PID())
	_ = k.Send(worker.PID(), "start")
	m, _ := watcher.Recv(ctx)
	fmt.Println(m.Body.(*kernel.Down).Reason)
	// Output: quota:llm_tokens
}

// A supervisor process restarts a crashing child, then gives up.
func ExampleSupervise() {
	k, _ := kernel.New(kernel.Options{Logger: quiet})
	defer k.Close(context.Background())
	events := make(chan supervisor.Event, 10)
	sup, _ := k.Spawn(kernel.Supervise(kernel.SupervisorSpec{
		Strategy:  supervisor.OneForOne,
		Intensity: 2,
		Period:    time.Minute,
		Children: []kernel.ChildSpec{{Name: "flaky", Main: func(context.Context, *kernel.Process) error {
			return errors.New("crashed")
		}}},
		OnEvent: func(e supervisor.Event) { events <- e },
	}), kernel.SpawnOptions{Grants: []capability.Grant{{Right: capability.Spawn}}})
	r, _ := sup.Wait(context.Background())
	close(events)
	for e := range events {
		fmt.Println(e.Action, e.Failed, e.Restarts)
	}
	fmt.Println(r.Kind)
	// Output:
	// restart flaky 1
	// restart flaky 2
	// escalate flaky 3
	// fault
}
