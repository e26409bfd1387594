// Command supervision-quotas shows the two ways the runtime ends an agent
// process it cannot trust to go on:
//
//   - supervision: a supervisor process restarts a child that fails, within
//     its restart intensity; a child that keeps failing (here: its tool
//     throws on every run) makes the supervisor give up and end with a
//     fault, escalating to whoever supervises it;
//   - quotas: a process that spends more than its budget of a meter (here
//     tool_calls: every kernel tool call costs one) is ended by the kernel
//     with reason quota:<meter>, while its siblings keep running.
//
// Run it from the repository's root:
//
//	go run ./examples/supervision-quotas
//
// It exits 1 if a restart, the escalation or the quota exit does not happen.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/actors/supervisor"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/kerneltools"
)

// broken throws on every run: the child that runs it fails each time.
const broken = `/** Loads the feed; the feed's URL is missing from its settings. */
export default function (): string {
  throw new Error("feed URL not configured");
}
`

var toolRights = []capability.Grant{{Right: capability.Read, Scope: "tools/"}, {Right: capability.Exec, Scope: "tools/"}}

func main() {
	executor.WorkerMain() // MUST come first: sandbox workers are this binary re-executed
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("OK: restarted within intensity, escalated beyond it, ended on quota")
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root, err := os.MkdirTemp("", "agentos-supervision-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	rt, err := host.Start(ctx, host.Config{Root: root, Logger: quiet})
	if err != nil {
		return err
	}
	defer rt.Close()
	if _, err := rt.Call(ctx, "write_file", mustJSON(map[string]string{"path": "tools/feed.ts", "content": broken})); err != nil {
		return err
	}

	if err := withinIntensity(ctx, rt); err != nil {
		return err
	}
	if err := escalation(ctx, rt); err != nil {
		return err
	}
	return quota(ctx, rt)
}

// withinIntensity: a child that fails on its first two starts and then
// stays up is restarted twice; its supervisor (3 restarts a minute) stays.
func withinIntensity(ctx context.Context, rt *host.Runtime) error {
	fmt.Println("1. a child that fails twice, under a supervisor allowing 3 restarts a minute")
	events := make(chan supervisor.Event, 16)
	up := make(chan struct{})
	starts := 0
	sup, err := rt.Kernel().Spawn(kernel.Supervise(kernel.SupervisorSpec{
		Strategy:  supervisor.OneForOne,
		Intensity: 3,
		Period:    time.Minute,
		Children: []kernel.ChildSpec{{Name: "warmup", Main: func(ctx context.Context, p *kernel.Process) error {
			starts++ // restarts are sequential: one child runs at a time
			if starts <= 2 {
				return fmt.Errorf("cache not warm yet (start %d)", starts)
			}
			close(up)
			<-ctx.Done()
			return nil
		}}},
		OnEvent: func(e supervisor.Event) { events <- e },
	}), kernel.SpawnOptions{Name: "sup-warmup", Image: "supervisor", Grants: []capability.Grant{{Right: capability.Spawn}}})
	if err != nil {
		return err
	}
	select {
	case <-up:
	case <-sup.Done():
		r, _ := sup.Reason()
		return fmt.Errorf("the supervisor ended (%s) instead of restarting its child", r)
	case <-ctx.Done():
		return errors.New("the child never came up")
	}
	restarts := 0
	for len(events) > 0 {
		e := <-events
		fmt.Printf("   %s %s (restart %d): %s\n", e.Action, e.Failed, e.Restarts, e.Reason)
		if e.Action == supervisor.ActionRestart {
			restarts++
		}
	}
	if _, ended := sup.Reason(); ended || restarts != 2 {
		return fmt.Errorf("want 2 restarts and the supervisor running, got %d restarts (ended: %v)", restarts, ended)
	}
	fmt.Printf("   warmup is up after %d starts; the supervisor is still alive (%s)\n", starts, sup.Info().Status)
	return rt.Kernel().Kill(sup.PID(), "the example")
}

// escalation: a child whose tool throws on every run exhausts the
// supervisor's intensity (2 restarts a minute): the supervisor escalates
// and ends with a fault.
func escalation(ctx context.Context, rt *host.Runtime) error {
	fmt.Println("2. a child whose tool always throws, under a supervisor allowing 2 restarts a minute")
	events := make(chan supervisor.Event, 16)
	sup, err := rt.Kernel().Spawn(kernel.Supervise(kernel.SupervisorSpec{
		Strategy:  supervisor.OneForOne,
		Intensity: 2,
		Period:    time.Minute,
		Children: []kernel.ChildSpec{{Name: "feed", Options: kernel.SpawnOptions{Grants: toolRights}, Main: func(ctx context.Context, p *kernel.Process) error {
			out, err := call(ctx, rt, p, "exec_tool", map[string]any{"path": "tools/feed.ts"})
			if err != nil {
				return err
			}
			var res kerneltools.ExecResult
			if err := json.Unmarshal(out, &res); err != nil {
				return err
			}
			if !res.Success {
				return fmt.Errorf("tools/feed.ts: %s", res.Error.Message)
			}
			return nil
		}}},
		OnEvent: func(e supervisor.Event) { events <- e },
	}), kernel.SpawnOptions{Name: "sup-feed", Image: "supervisor", Grants: append([]capability.Grant{{Right: capability.Spawn}}, toolRights...)})
	if err != nil {
		return err
	}
	reason, err := sup.Wait(ctx)
	if err != nil {
		return err
	}
	close(events)
	var escalated bool
	for e := range events {
		fmt.Printf("   %s %s (restart %d): %s\n", e.Action, e.Failed, e.Restarts, firstLine(e.Reason))
		escalated = escalated || e.Action == supervisor.ActionEscalate
	}
	fmt.Println("   the supervisor ended:", firstLine(reason.String()))
	if !escalated || reason.Kind != kernel.Fault {
		return fmt.Errorf("want an escalation and the supervisor ended with a fault, got %s", reason)
	}
	return nil
}

// quota: a process with a budget of 3 tool calls makes a fourth; the
// kernel ends it with quota:tool_calls. The default process lives on.
func quota(ctx context.Context, rt *host.Runtime) error {
	fmt.Println("3. a process with a budget of 3 tool calls that keeps listing tools/")
	calls := 0
	var last error
	returned := make(chan struct{}) // the kernel ends p at the refused charge, before its Main returns
	p, err := rt.Kernel().Spawn(func(ctx context.Context, p *kernel.Process) error {
		defer close(returned)
		for {
			if _, err := call(ctx, rt, p, "list_files", map[string]any{"dir": "tools"}); err != nil {
				last = err
				return err
			}
			calls++
		}
	}, kernel.SpawnOptions{Name: "spender", Grants: toolRights, Quota: capability.Limits{capability.ToolCalls: 3}})
	if err != nil {
		return err
	}
	reason, err := p.Wait(ctx)
	if err != nil {
		return err
	}
	<-returned
	var qe *capability.QuotaError
	fmt.Printf("   %d calls answered, then: %v\n", calls, last)
	fmt.Println("   the process ended:", reason)
	if reason.String() != "quota:tool_calls" || calls != 3 || !errors.As(last, &qe) {
		return fmt.Errorf("want 3 calls and the process ended with quota:tool_calls, got %d calls, %s", calls, reason)
	}
	if _, err := rt.Call(ctx, "list_files", mustJSON(map[string]string{"dir": "tools"})); err != nil {
		return fmt.Errorf("the default process was affected: %w", err)
	}
	fmt.Println("   the default process still answers list_files")
	return nil
}

// call runs one kernel tool as p, exactly as an LLM's tool call would.
func call(ctx context.Context, rt *host.Runtime, p *kernel.Process, name string, args any) (json.RawMessage, error) {
	tools, err := rt.ToolsFor(p, name)
	if err != nil {
		return nil, err
	}
	return tools[0].Call(ctx, mustJSON(args))
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
