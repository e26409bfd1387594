package system_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentos-run/agentos/internal/testutil"
	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/agentos-run/agentos/actors/system"
)

// The tests below first show what raw protoactor does ("raw:"): if one of
// those checks fails, protoactor has changed, and the fence it motivates
// MUST be reviewed (kept, changed or dropped) rather than the check
// silenced.

// ---- helpers ----

// recorder keeps every record its handlers receive.
type recorder struct {
	mu   sync.Mutex
	recs []record
}

type record struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (r *recorder) handler() slog.Handler { return recHandler{r: r} }

func (r *recorder) all() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs)
}

func (r *recorder) find(msg string) (record, bool) {
	for _, rec := range r.all() {
		if rec.msg == msg {
			return rec, true
		}
	}
	return record{}, false
}

// recHandler records everything: any filtering seen in a test is the
// fence's.
type recHandler struct {
	r     *recorder
	attrs []slog.Attr
}

func (h recHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h recHandler) Handle(_ context.Context, r slog.Record) error {
	rec := record{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool { rec.attrs[a.Key] = a.Value.String(); return true })
	h.r.mu.Lock()
	h.r.recs = append(h.r.recs, rec)
	h.r.mu.Unlock()
	return nil
}

func (h recHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return recHandler{r: h.r, attrs: append(slices.Clip(h.attrs), attrs...)}
}

func (h recHandler) WithGroup(string) slog.Handler { return h }

func quiet() system.Options { return system.Options{Logger: slog.New(slog.DiscardHandler)} }

func quietRaw(t *testing.T) *actor.ActorSystem {
	t.Helper()
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
}

func shutdown(t *testing.T, s *system.System) {
	t.Helper()
	t.Cleanup(func() {
		if err := s.Shutdown(5 * time.Second); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
}

// panicky counts its starts, panics on "boom", logs a Warn on "warn" and
// answers "ok" to "ping".
type panicky struct{ starts *atomic.Int64 }

func (p *panicky) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p.starts.Add(1)
	case string:
		switch m {
		case "boom":
			panic("boom")
		case "warn":
			ctx.Logger().Warn("actor warn")
			ctx.Respond("ok")
		case "ping":
			ctx.Respond("ok")
		}
	}
}

func panickyProps(starts *atomic.Int64) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &panicky{starts: starts} })
}

// echo answers "ping" with "pong" and "tenant?" with the "tenant" header
// of the request.
var echo = actor.PropsFromFunc(func(ctx actor.Context) {
	switch ctx.Message() {
	case "ping":
		ctx.Respond("pong")
	case "tenant?":
		ctx.Respond(ctx.MessageHeader().Get("tenant"))
	}
})

func ask(t *testing.T, root *actor.RootContext, pid *actor.PID, msg any) any {
	t.Helper()
	res, err := root.RequestFuture(pid, msg, 5*time.Second).Result()
	if err != nil {
		t.Fatalf("request %v: %v", msg, err)
	}
	return res
}

// ---- fence 1: logging ----

func TestLogging(t *testing.T) {
	t.Run("raw: protoactor logs its chatter at Info", func(t *testing.T) {
		rec := &recorder{}
		raw := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(rec.handler()) }))
		var starts atomic.Int64
		pid := raw.Root.Spawn(panickyProps(&starts))
		t.Cleanup(func() { _ = raw.Root.StopFuture(pid).Wait() })
		raw.Root.Send(pid, "boom")
		testutil.Eventually(t, 5*time.Second, "the restart", func() bool { return starts.Load() == 2 })
		for _, msg := range []string{"actor system started", "[ACTOR] Recovering"} {
			if r, ok := rec.find(msg); !ok || r.level != slog.LevelInfo {
				t.Errorf("raw: no Info %q from protoactor (records %+v): protoactor's logging changed, review the fence", msg, rec.all())
			}
		}
	})

	for _, tc := range []struct {
		name  string
		level slog.Leveler
		kept  []string // messages that reach the handler
		gone  []string // messages that do not
	}{
		{"default level is Warn", nil, []string{"system warn", "actor warn"}, []string{"actor system started", "[ACTOR] Recovering"}},
		{"Info when asked", slog.LevelInfo, []string{"actor system started", "[ACTOR] Recovering", "system warn", "actor warn"}, nil},
		{"Error drops Warn", slog.LevelError, nil, []string{"actor system started", "[ACTOR] Recovering", "system warn", "actor warn"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			s := system.New(system.Options{Logger: slog.New(rec.handler()), Level: tc.level})
			shutdown(t, s)
			var starts atomic.Int64
			pid := s.Spawn(panickyProps(&starts))
			s.Root().Send(pid, "boom")
			testutil.Eventually(t, 5*time.Second, "the restart", func() bool { return starts.Load() == 2 })
			ask(t, s.Root(), pid, "warn")
			s.ActorSystem().Logger().Warn("system warn")
			for _, msg := range tc.kept {
				r, ok := rec.find(msg)
				if !ok {
					t.Errorf("%q did not reach the logger (records %+v)", msg, rec.all())
					continue
				}
				if r.attrs["lib"] != "protoactor" || r.attrs["system"] != s.ActorSystem().ID {
					t.Errorf("%q has attributes %v, want lib=protoactor system=%s", msg, r.attrs, s.ActorSystem().ID)
				}
			}
			for _, msg := range tc.gone {
				if _, ok := rec.find(msg); ok {
					t.Errorf("%q reached the logger", msg)
				}
			}
		})
	}
}

// ---- fence 2: shutdown ----

// node records its Stopping and Stopped in log, spawns the named children
// on Started and answers "ready?".
type node struct {
	name     string
	children []string
	log      *events
}

type events struct {
	mu sync.Mutex
	ev []string
}

func (e *events) add(s string) { e.mu.Lock(); e.ev = append(e.ev, s); e.mu.Unlock() }
func (e *events) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.ev)
}

func (n *node) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		for _, c := range n.children {
			if _, err := ctx.SpawnNamed(nodeProps(c, n.log), c); err != nil {
				panic(err)
			}
		}
	case *actor.Stopping:
		n.log.add(n.name + " stopping")
	case *actor.Stopped:
		n.log.add(n.name + " stopped")
	case string:
		ctx.Respond("ready")
	}
}

func nodeProps(name string, log *events, children ...string) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &node{name: name, children: children, log: log} })
}

func TestShutdown(t *testing.T) {
	t.Run("raw: ActorSystem.Shutdown stops no actor", func(t *testing.T) {
		raw := quietRaw(t)
		pid := raw.Root.Spawn(echo)
		raw.Shutdown()
		if !raw.IsStopped() {
			t.Fatal("raw: the system does not say it is stopped")
		}
		res, err := raw.Root.RequestFuture(pid, "ping", 5*time.Second).Result()
		if err != nil || res != "pong" {
			t.Errorf("raw: after Shutdown the actor answered %v, %v: protoactor now stops actors, review the fence", res, err)
		}
		_ = raw.Root.StopFuture(pid).Wait()
	})

	t.Run("raw: ActorSystem.Shutdown panics when called twice", func(t *testing.T) {
		raw := quietRaw(t)
		raw.Shutdown()
		defer func() {
			if recover() == nil {
				t.Error("raw: a second Shutdown did not panic: protoactor changed, review the fence")
			}
		}()
		raw.Shutdown()
	})

	t.Run("stops every actor, children first, last spawned first", func(t *testing.T) {
		s := system.New(quiet())
		log := &events{}
		var pids []*actor.PID
		for _, name := range []string{"a", "b"} {
			pid, err := s.SpawnNamed(nodeProps(name, log, name+"1"), name)
			if err != nil {
				t.Fatal(err)
			}
			ask(t, s.Root(), pid, "ready?") // Started ran: its child is spawned
			pids = append(pids, pid, actor.NewPID(pid.Address, pid.Id+"/"+name+"1"))
		}
		if err := s.Shutdown(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		want := []string{"b stopping", "b1 stopping", "b1 stopped", "b stopped", "a stopping", "a1 stopping", "a1 stopped", "a stopped"}
		if got := log.all(); !slices.Equal(got, want) {
			t.Errorf("lifecycle\n got %v\nwant %v", got, want)
		}
		for _, pid := range pids {
			if _, ok := s.ActorSystem().ProcessRegistry.Get(pid); ok {
				t.Errorf("%s is still registered", pid.Id)
			}
		}
		if !s.ActorSystem().IsStopped() {
			t.Error("the protoactor system was not shut down")
		}
	})

	t.Run("idempotent and safe concurrently; no spawn afterwards", func(t *testing.T) {
		s := system.New(quiet())
		log := &events{}
		for i := range 5 {
			s.Spawn(nodeProps(fmt.Sprint(i), log))
		}
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() { errs[i] = s.Shutdown(5 * time.Second) })
		}
		wg.Wait()
		for _, err := range append(errs, s.Shutdown(time.Second)) {
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := len(log.all()); n != 10 {
			t.Errorf("%d lifecycle events, want 10 (each actor stopped once): %v", n, log.all())
		}
		if _, err := s.SpawnNamed(echo, "late"); !errors.Is(err, system.ErrShutdown) {
			t.Errorf("SpawnNamed after Shutdown: %v, want ErrShutdown", err)
		}
		func() {
			defer func() {
				if r := recover(); r != system.ErrShutdown {
					t.Errorf("Spawn after Shutdown panicked with %v, want ErrShutdown", r)
				}
			}()
			s.Spawn(echo)
		}()
	})

	t.Run("actors that stopped on their own are forgotten", func(t *testing.T) {
		s := system.New(quiet())
		log := &events{}
		var pids []*actor.PID
		for i := range 200 { // past the pruning threshold
			pids = append(pids, s.Spawn(nodeProps(fmt.Sprint(i), log)))
		}
		for _, pid := range pids {
			if err := s.Root().StopFuture(pid).Wait(); err != nil {
				t.Fatal(err)
			}
		}
		// A name reused after its first actor stopped is one actor.
		if _, err := s.SpawnNamed(nodeProps("x", log), "x"); err != nil {
			t.Fatal(err)
		}
		if err := s.Root().StopFuture(actor.NewPID(pids[0].Address, "x")).Wait(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SpawnNamed(nodeProps("x again", log), "x"); err != nil {
			t.Fatal(err)
		}
		if err := s.Shutdown(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		if got := log.all(); len(got) != 2*202 || got[len(got)-1] != "x again stopped" {
			t.Errorf("%d events, last %q", len(got), got[len(got)-1])
		}
	})

	t.Run("bounded: names the actors that did not stop", func(t *testing.T) {
		s := system.New(quiet())
		var dead atomic.Int64
		s.ActorSystem().EventStream.Subscribe(func(m any) {
			if _, ok := m.(*actor.DeadLetterEvent); ok {
				dead.Add(1)
			}
		})
		release := make(chan struct{})
		first, err := s.SpawnNamed(echo, "first")
		if err != nil {
			t.Fatal(err)
		}
		stuck, err := s.SpawnNamed(actor.PropsFromFunc(func(ctx actor.Context) {
			if _, ok := ctx.Message().(*actor.Stopping); ok {
				<-release
			}
		}), "stuck")
		if err != nil {
			t.Fatal(err)
		}
		err = s.Shutdown(50 * time.Millisecond)
		var se *system.StopError
		if !errors.As(err, &se) || !errors.Is(err, system.ErrStopTimeout) {
			t.Fatalf("Shutdown: %v, want a *StopError", err)
		}
		if len(se.PIDs) != 2 || se.PIDs[0].Id != "stuck" || se.PIDs[1].Id != "first" {
			t.Errorf("StopError names %v, want stuck then first", se.PIDs)
		}
		if msg := err.Error(); !strings.Contains(msg, "stuck, first") || !strings.Contains(msg, "timeout") {
			t.Errorf("error %q does not say which actors or what to do", msg)
		}
		if !errors.Is(s.Shutdown(time.Second), system.ErrStopTimeout) {
			t.Error("a second Shutdown did not return the first one's error")
		}
		close(release)
		testutil.Eventually(t, 5*time.Second, "the actors to stop", func() bool {
			_, ok1 := s.ActorSystem().ProcessRegistry.Get(first)
			_, ok2 := s.ActorSystem().ProcessRegistry.Get(stuck)
			return !ok1 && !ok2
		})
		// The late Terminated of "stuck" reached Shutdown's watcher: no
		// dead letter (a timed-out protoactor Future would have made one).
		if n := dead.Load(); n != 0 {
			t.Errorf("%d dead letters", n)
		}
	})
}

// ---- fence 3: root context ----

// stamp is a sender middleware that copies the root context's headers onto
// every message it sends: the usual way root headers reach actors.
func stamp(next actor.SenderFunc) actor.SenderFunc {
	return func(ctx actor.SenderContext, target *actor.PID, env *actor.MessageEnvelope) {
		for k, v := range ctx.MessageHeader().ToMap() {
			env.SetHeader(k, v)
		}
		next(ctx, target, env)
	}
}

func TestRootContext(t *testing.T) {
	tenantA := map[string]string{"tenant": "a"}

	t.Run("raw: WithHeaders changes the shared Root", func(t *testing.T) {
		raw := quietRaw(t)
		defer raw.Shutdown()
		pid := raw.Root.Spawn(echo)
		defer func() { _ = raw.Root.StopFuture(pid).Wait() }()
		mine := raw.Root.WithHeaders(tenantA).WithSenderMiddleware(stamp) // caller A
		if mine != raw.Root {
			t.Error("raw: WithHeaders returned a new context: protoactor changed, review the fence")
		}
		// Caller B, who set nothing, now sends as tenant a.
		if got := raw.Root.MessageHeader().Get("tenant"); got != "a" {
			t.Errorf("raw: the shared Root's tenant header is %q after caller A's WithHeaders: protoactor changed, review the fence", got)
		}
		if got := ask(t, raw.Root, pid, "tenant?"); got != "a" {
			t.Errorf("raw: caller B's message carried tenant %q: protoactor changed, review the fence", got)
		}
	})

	t.Run("System.Root is per caller", func(t *testing.T) {
		s := system.New(quiet())
		shutdown(t, s)
		pid := s.Spawn(echo)
		a := s.Root().WithHeaders(tenantA).WithSenderMiddleware(stamp)
		b := s.Root()
		if a == b {
			t.Fatal("Root returned the same context twice")
		}
		if got := ask(t, a, pid, "tenant?"); got != "a" {
			t.Errorf("caller A's message carried tenant %q, want a", got)
		}
		if got := b.MessageHeader().Get("tenant"); got != "" {
			t.Errorf("caller B's root has tenant %q", got)
		}
		if got := ask(t, b, pid, "tenant?"); got != "" {
			t.Errorf("caller B's message carried tenant %q", got)
		}
		if got := ask(t, s.ActorSystem().Root, pid, "tenant?"); got != "" || s.ActorSystem().Root.MessageHeader().Length() != 0 {
			t.Errorf("the shared Root changed: tenant %q", got)
		}
	})
}

// ---- fence 4: remote messages ----

func TestCheckRemote(t *testing.T) {
	type plain struct{ Name string }
	unregistered, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:        proto.String("agentos_system_test_unregistered.proto"),
		Package:     proto.String("agentos.systemtest"),
		Syntax:      proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("Unregistered")}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		msg  any
		want []string // substrings of the error; nil: accepted
	}{
		{"protobuf message", wrapperspb.String("x"), nil},
		{"plain struct", plain{Name: "x"}, []string{"system_test.plain", "not a proto.Message", "protoc-gen-go"}},
		{"pointer to plain struct", &plain{Name: "x"}, []string{"*system_test.plain", "protoc-gen-go"}},
		{"string", "ping", []string{"string", "protoc-gen-go"}},
		{"nil", nil, []string{"nil"}},
		{"unregistered dynamic message", dynamicpb.NewMessage(unregistered.Messages().Get(0)), []string{"agentos.systemtest.Unregistered", "registry"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := system.CheckRemote(tc.msg)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, system.ErrNotProtobuf) {
				t.Fatalf("CheckRemote = %v, want ErrNotProtobuf", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// ---- example ----

// Top-level actors stop in reverse spawn order: the one others depend on
// is spawned first and stops last.
func Example() {
	sys := system.New(system.Options{}) // logs to slog.Default(), Warn and above
	for _, name := range []string{"journal", "kernel"} {
		_, err := sys.SpawnNamed(actor.PropsFromFunc(func(ctx actor.Context) {
			if _, ok := ctx.Message().(*actor.Stopped); ok {
				fmt.Println(name, "stopped")
			}
		}), name)
		if err != nil {
			fmt.Println(err)
		}
	}
	if err := sys.Shutdown(5 * time.Second); err != nil {
		fmt.Println(err)
	}
	fmt.Println(system.CheckRemote(wrapperspb.String("ping")) == nil)
	fmt.Println(errors.Is(system.CheckRemote("ping"), system.ErrNotProtobuf))
	// Output:
	// kernel stopped
	// journal stopped
	// true
	// true
}

// protoactor's errors about a member that went away are routine in a
// cluster: they are logged at Info (shown with -v), not as errors; other
// errors keep their level.
func TestRoutineClusterErrorsAreInfo(t *testing.T) {
	for _, min := range []slog.Level{slog.LevelWarn, slog.LevelInfo} {
		var buf bytes.Buffer
		s := system.New(system.Options{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), Level: min})
		log := s.ActorSystem().Logger()
		log.Error("EndpointWriter lost connection", slog.String("address", "127.0.0.1:1"))
		log.Error("something else broke")
		_ = s.Shutdown(0)
		out := buf.String()
		if !strings.Contains(out, "level=ERROR msg=\"something else broke\"") {
			t.Errorf("min %v: another error lost its level:\n%s", min, out)
		}
		routine := strings.Contains(out, "EndpointWriter lost connection")
		if routine != (min == slog.LevelInfo) || strings.Contains(out, "level=ERROR msg=\"EndpointWriter") {
			t.Errorf("min %v: the routine error:\n%s", min, out)
		}
	}
}

// protoactor repeats its warnings about ten times a second during a
// fault: one message is logged once per window, and the next one logged
// says how many were dropped.
func TestRepeatedWarningsRateLimited(t *testing.T) {
	var buf bytes.Buffer
	s := system.New(system.Options{Logger: slog.New(slog.NewTextHandler(&buf, nil)), RepeatWindow: 300 * time.Millisecond})
	defer s.Shutdown(0)
	log := s.ActorSystem().Logger()
	for i := 0; i < 50; i++ {
		log.Warn("Got gossip request from unknown member", slog.Int("i", i))
		log.Error("EndpointWriter failed to connect") // routine: Info, dropped at Warn
		log.Error("another failure")
	}
	time.Sleep(350 * time.Millisecond)
	log.Warn("Got gossip request from unknown member", slog.Int("i", 50))
	out := buf.String()
	if n := strings.Count(out, "Got gossip request"); n != 2 {
		t.Fatalf("the repeated warning was logged %d times, want 2 (first, then one after the window):\n%s", n, out)
	}
	if !strings.Contains(out, "i=50 repeated=49 within=300ms") || strings.Count(out, "another failure") != 1 {
		t.Errorf("want the second line to count the 49 dropped, and another message limited on its own:\n%s", out)
	}
}
