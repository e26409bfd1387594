package registry

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

func startActor(t *testing.T, r *Registry) (*actor.ActorSystem, *actor.PID) {
	t.Helper()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	pid := sys.Root.Spawn(Props(r))
	t.Cleanup(func() { sys.Shutdown() })
	return sys, pid
}

func ask[T any](t *testing.T, sys *actor.ActorSystem, pid *actor.PID, msg any) T {
	t.Helper()
	res, err := sys.Root.RequestFuture(pid, msg, 5*time.Second).Result()
	if err != nil {
		t.Fatalf("%T: %v", msg, err)
	}
	out, ok := res.(T)
	if !ok {
		t.Fatalf("%T answered %T", msg, res)
	}
	return out
}

func TestActor(t *testing.T) {
	rt := newRoot(t)
	r := rt.open(rt.options())
	sys, pid := startActor(t, r)

	const path = "tools/finance/compound_interest.ts"
	rt.write(path, compoundSrc)
	reg := ask[*Registered](t, sys, pid, &Register{Path: path, Source: []byte(compoundSrc)})
	if reg.Err != nil || reg.Tool.Version != 1 || reg.Tool.Description != "Calculates compound interest over years." {
		t.Fatalf("Registered %+v", reg)
	}
	if bad := ask[*Registered](t, sys, pid, &Register{Path: "notes.txt", Source: []byte("x")}); !errors.Is(bad.Err, ErrNotTool) {
		t.Fatalf("Register of a non-tool: %+v", bad)
	}
	res := ask[*SearchResult](t, sys, pid, &Search{Query: "compound interest calculator"})
	if len(res.Hits) != 1 || res.Hits[0].Path != path || res.Hits[0].Score < r.Threshold() {
		t.Fatalf("SearchResult %+v", res)
	}
	if empty := ask[*SearchResult](t, sys, pid, &Search{Query: "send an email", Limit: 3}); empty.Hits == nil || len(empty.Hits) != 0 {
		t.Fatalf("unrelated search: %+v", empty)
	}

	sys.Root.Send(pid, &Used{Path: path})
	sys.Root.Send(pid, &Used{Path: path})
	sys.Root.Send(pid, "an unknown message") // logged, dropped
	if f := ask[*Flushed](t, sys, pid, &Flush{}); f.Err != nil {
		t.Fatal(f.Err)
	}
	if u := rt.meta()[path].Usage; u != 2 {
		t.Fatalf("usage on disk %d, want 2", u)
	}

	rt.write("tools/math/fib.ts", corpus["tools/math/fib.ts"])
	if rb := ask[*Rebuilt](t, sys, pid, &Rebuild{}); rb.Err != nil {
		t.Fatal(rb.Err)
	}
	if _, ok := r.Get("tools/math/fib.ts"); !ok {
		t.Fatal("Rebuild did not pick up the new tool")
	}
	if rm := ask[*Removed](t, sys, pid, &Remove{Path: "tools/none.ts"}); !errors.Is(rm.Err, ErrNotRegistered) {
		t.Fatalf("Removed %+v", rm)
	}

	// Stopping the actor writes pending usage: Poison is queued after the
	// Used messages sent before it (Stop would overtake them).
	sys.Root.Send(pid, &Used{Path: path})
	if err := sys.Root.PoisonFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
	if u := rt.meta()[path].Usage; u != 3 {
		t.Fatalf("usage on disk after stop %d, want 3", u)
	}
}

// TestActorRestartKeepsState: the actor holds no state; a restart (here, a
// new actor on the same Registry) serves the same tools.
func TestActorRestartKeepsState(t *testing.T) {
	rt := newRoot(t)
	r := rt.open(rt.options())
	sys, pid := startActor(t, r)
	ask[*Registered](t, sys, pid, &Register{Path: "tools/a.ts", Source: []byte("/** Ay. */\nexport default function a() {}")})
	if err := sys.Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
	pid = sys.Root.Spawn(Props(r))
	if res := ask[*SearchResult](t, sys, pid, &Search{Query: "ay"}); len(res.Hits) != 1 {
		t.Fatalf("after restart: %+v", res)
	}
}
