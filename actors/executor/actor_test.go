package executor

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
	"github.com/agentos-run/agentos/actors/supervisor"
	"github.com/agentos-run/agentos/driver"
	"github.com/asynkron/protoactor-go/actor"
)

// A run that panics inside the executor (here: a journal-like middleware
// with a bug) answers its caller with an internal error and restarts the
// executor actor through its supervisor, while a run in flight completes.
func TestActorPanickingRunRestarts(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			e := newExec(t, mode, map[string]string{
				"tools/fib.ts":   fibTool,
				"tools/slow.ts":  `export default function () { let s = 0; for (let i = 0; i < 2e5; i++) { s += i; } return typeof s; }`,
				"tools/clock.ts": `export default async function () { return (await tgp.read_file("tools/fib.ts")).length; }`,
			})
			sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
			var mu sync.Mutex
			var events []supervisor.Event
			props, err := supervisor.Props(supervisor.Spec{
				Strategy: supervisor.OneForOne, Intensity: 5, Period: time.Minute,
				Children: []supervisor.ChildSpec{{Name: "executor", Props: Props(e, nil)}},
				OnEvent:  func(ev supervisor.Event) { mu.Lock(); events = append(events, ev); mu.Unlock() },
			})
			if err != nil {
				t.Fatal(err)
			}
			sup := sys.Root.Spawn(props)
			defer func() { _ = sys.Root.StopFuture(sup).Wait() }()
			res, err := sys.Root.RequestFuture(sup, &supervisor.WhichChildren{}, 5*time.Second).Result()
			if err != nil {
				t.Fatal(err)
			}
			exec := res.(*supervisor.Children).PIDs[0]

			slow := sys.Root.RequestFuture(exec, &Run{Ctx: context.Background(), Request: Request{Path: "tools/slow.ts"}}, time.Minute)
			bomb := func(driver.Host) driver.Host {
				return driver.HostFunc(func(context.Context, driver.Call) (json.RawMessage, error) { panic("bug in a middleware") })
			}
			got, err := sys.Root.RequestFuture(exec, &Run{Request: Request{Path: "tools/clock.ts", Middleware: []driver.Middleware{bomb}}}, time.Minute).Result()
			if err != nil {
				t.Fatal(err)
			}
			ran := got.(*Ran)
			if ran.Result.Success || ran.Result.Error == nil {
				t.Fatalf("the panicking run succeeded: %+v", ran.Result)
			}
			t.Logf("panicking run: %s: %.80s", ran.Result.Error.Kind, ran.Result.Error.Message)
			got, err = slow.Result()
			if err != nil {
				t.Fatal(err)
			}
			if r := got.(*Ran).Result; !r.Success || string(r.Result) != `"number"` {
				t.Fatalf("the run in flight did not complete: %+v", r)
			}
			// The actor still serves runs.
			got, err = sys.Root.RequestFuture(exec, &Run{Request: Request{Path: "tools/fib.ts", Args: json.RawMessage(`{"n":10}`)}}, time.Minute).Result()
			if err != nil || string(got.(*Ran).Result.Result) != "55" {
				t.Fatalf("after the panic: %v %+v", err, got)
			}
			mu.Lock()
			defer mu.Unlock()
			if ran.Result.Error.Kind != sandbox.KindInternal || !strings.Contains(ran.Result.Error.Message, "bug in a middleware") {
				t.Fatalf("the panicking run's error: %+v", ran.Result.Error)
			}
			if len(events) != 1 || events[0].Action != supervisor.ActionRestart || !strings.Contains(events[0].Reason, "bug in a middleware") {
				t.Fatalf("supervisor events = %+v, want one restart naming the panic", events)
			}
		})
	}
}
