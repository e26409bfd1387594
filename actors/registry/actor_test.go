package registry

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	regclient "github.com/agentos-run/agentos/actors/registry/client"
	"github.com/asynkron/protoactor-go/actor"
)

// startActor serves r with a registry actor and returns its client.
func startActor(t *testing.T, r *Registry) (*actor.ActorSystem, *regclient.Client) {
	t.Helper()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	pid := sys.Root.Spawn(Props(r))
	t.Cleanup(func() { sys.Shutdown() })
	c := regclient.New(sys.Root, pid)
	c.Timeout = 5 * time.Second
	return sys, c
}

func TestActor(t *testing.T) {
	rt := newRoot(t)
	r := rt.open(rt.options())
	sys, c := startActor(t, r)
	ctx := context.Background()

	const path = "tools/finance/compound_interest.ts"
	rt.write(path, compoundSrc)
	tool, err := c.Register(ctx, path, []byte(compoundSrc))
	if err != nil || tool.Version != 1 || tool.Description != "Calculates compound interest over years." {
		t.Fatalf("Register: %+v, %v", tool, err)
	}
	if bad, err := c.Register(ctx, "notes.txt", []byte("x")); !errors.Is(err, regclient.ErrNotTool) {
		t.Fatalf("Register of a non-tool: %+v, %v", bad, err)
	}
	hits, err := c.Search(ctx, "compound interest calculator", 0)
	if err != nil || len(hits) != 1 || hits[0].Path != path || hits[0].Score < r.Threshold() {
		t.Fatalf("Search: %+v, %v", hits, err)
	}
	if empty, err := c.Search(ctx, "send an email", 3); err != nil || empty == nil || len(empty) != 0 {
		t.Fatalf("unrelated search: %+v, %v", empty, err)
	}
	if got, ok, err := c.Get(ctx, path); err != nil || !ok || got.Hash != tool.Hash || got.Path != path {
		t.Fatalf("Get(%s): %+v, %v, %v", path, got, ok, err)
	}
	if got, ok, err := c.Get(ctx, "tools/none.ts"); err != nil || ok || got.Path != "" {
		t.Fatalf("Get of an unregistered path: %+v, %v, %v", got, ok, err)
	}

	for range 2 {
		if err := c.Used(ctx, path); err != nil {
			t.Fatal(err)
		}
	}
	sys.Root.Send(c.PID, "an unknown message") // logged, dropped
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if u := rt.meta()[path].Usage; u != 2 {
		t.Fatalf("usage on disk %d, want 2", u)
	}

	rt.write("tools/math/fib.ts", corpus["tools/math/fib.ts"])
	if err := r.Rebuild(); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Get("tools/math/fib.ts"); !ok {
		t.Fatal("Rebuild did not pick up the new tool")
	}
	if err := r.Remove("tools/none.ts"); !errors.Is(err, regclient.ErrNotRegistered) {
		t.Fatalf("Remove: %v", err)
	}

	// Stopping the actor writes pending usage: Poison is queued after the
	// Used messages sent before it (Stop would overtake them).
	if err := c.Used(ctx, path); err != nil {
		t.Fatal(err)
	}
	if err := sys.Root.PoisonFuture(c.PID).Wait(); err != nil {
		t.Fatal(err)
	}
	if u := rt.meta()[path].Usage; u != 3 {
		t.Fatalf("usage on disk after stop %d, want 3", u)
	}

	// A stopped actor: the client says so, with ErrUnavailable.
	if _, err := c.Search(ctx, "compound", 1); !errors.Is(err, regclient.ErrUnavailable) {
		t.Fatalf("Search of a stopped actor: %v, want ErrUnavailable", err)
	}
}

// TestActorRestartKeepsState: the actor holds no state; a restart (here, a
// new actor on the same Registry) serves the same tools.
func TestActorRestartKeepsState(t *testing.T) {
	rt := newRoot(t)
	r := rt.open(rt.options())
	sys, c := startActor(t, r)
	ctx := context.Background()
	if _, err := c.Register(ctx, "tools/a.ts", []byte("/** Ay. */\nexport default function a() {}")); err != nil {
		t.Fatal(err)
	}
	if err := sys.Root.StopFuture(c.PID).Wait(); err != nil {
		t.Fatal(err)
	}
	c.PID = sys.Root.Spawn(Props(r))
	if hits, err := c.Search(ctx, "ay", 0); err != nil || len(hits) != 1 {
		t.Fatalf("after restart: %+v, %v", hits, err)
	}
}

// TestClientCancelled: a request whose ctx has ended is not sent, and one
// abandoned by its ctx returns ErrUnavailable wrapping the ctx's error.
func TestClientCancelled(t *testing.T) {
	rt := newRoot(t)
	r := rt.open(rt.options())
	_, c := startActor(t, r)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Search(ctx, "x", 1); !errors.Is(err, regclient.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
}

// TestClientListAndWatch: List answers every tool, sorted by path, as the
// Registry's List does; Watch hears each change of its registry actor's
// Registry (not of another registry actor in the same actor system), none
// after stop, and none once the actor has stopped.
func TestClientListAndWatch(t *testing.T) {
	rt := newRoot(t)
	r := rt.open(rt.options())
	sys, c := startActor(t, r)
	ctx := context.Background()
	if tools, err := c.List(ctx); err != nil || tools == nil || len(tools) != 0 {
		t.Fatalf("List of an empty registry: %+v, %v", tools, err)
	}

	other := newRoot(t)
	otherPID := sys.Root.Spawn(Props(other.open(other.options())))
	otherC := regclient.New(sys.Root, otherPID)
	var heard, heardOther atomic.Int32
	stop := c.Watch(func() { heard.Add(1) })
	defer otherC.Watch(func() { heardOther.Add(1) })()

	for _, p := range []string{"tools/b.ts", "tools/a.ts"} {
		src := "/** Tool " + p + ". */\nexport default function f() {}\n"
		rt.write(p, src)
		if _, err := c.Register(ctx, p, []byte(src)); err != nil {
			t.Fatal(err)
		}
	}
	// The actor publishes before it answers Register.
	if n := heard.Load(); n != 2 {
		t.Fatalf("Watch heard %d changes after 2 new tools, want 2", n)
	}
	tools, err := c.List(ctx)
	if err != nil || len(tools) != 2 || tools[0].Path != "tools/a.ts" || tools[1].Path != "tools/b.ts" {
		t.Fatalf("List: %+v, %v", tools, err)
	}
	if want := r.List(); !reflect.DeepEqual(tools, want) {
		t.Fatalf("List over the actor:\n%+v\nthe Registry's:\n%+v", tools, want)
	}
	if n := heardOther.Load(); n != 0 {
		t.Fatalf("a watcher of another registry actor heard %d changes", n)
	}

	stop()
	stop() // a second stop is harmless
	if err := r.Remove("tools/a.ts"); err != nil {
		t.Fatal(err)
	}
	if n := heard.Load(); n != 2 {
		t.Fatalf("Watch heard %d changes after stop, want 2", n)
	}

	// Once the actor stopped, its registry's changes are published no more.
	again := c.Watch(func() { heard.Add(1) })
	defer again()
	if err := sys.Root.StopFuture(c.PID).Wait(); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove("tools/b.ts"); err != nil {
		t.Fatal(err)
	}
	if n := heard.Load(); n != 2 {
		t.Fatalf("a stopped registry actor published %d changes", n-2)
	}
}
