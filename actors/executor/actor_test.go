package executor

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	pb "github.com/agentos-run/agentos/actors/executor/executorpb"
	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
	"github.com/agentos-run/agentos/actors/supervisor"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/journal"
	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

func quietSystem() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
}

// startActor spawns an executor actor over e and returns its client.
func startActor(t *testing.T, e *Executor, opts ActorOptions) *execclient.Client {
	t.Helper()
	sys := quietSystem()
	pid := sys.Root.Spawn(Props(e, opts))
	t.Cleanup(func() { _ = sys.Root.StopFuture(pid).Wait() })
	return execclient.New(sys.Root, pid)
}

// A bridge call whose driver panics (here a device with a bug) answers its
// run with an internal error and restarts the executor actor through its
// supervisor, while a run in flight completes.
func TestActorPanickingRunRestarts(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			e := newExec(t, mode, map[string]string{
				"tools/fib.ts":  fibTool,
				"tools/slow.ts": `export default function () { let s = 0; for (let i = 0; i < 2e5; i++) { s += i; } return typeof s; }`,
				"tools/bomb.ts": `export default async function () { return await tgp.bomb(); }`,
			}, func(o *Options) {
				o.Devices = map[string]driver.Device{"bomb": driver.DeviceFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
					panic("bug in a driver")
				})}
				o.Bindings = []Binding{{Name: "bomb", Driver: "bomb", Op: "go"}}
			})
			sys := quietSystem()
			var mu sync.Mutex
			var events []supervisor.Event
			props, err := supervisor.Props(supervisor.Spec{
				Strategy: supervisor.OneForOne, Intensity: 5, Period: time.Minute,
				Children: []supervisor.ChildSpec{{Name: "executor", Props: Props(e, ActorOptions{})}},
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
			c := execclient.New(sys.Root, res.(*supervisor.Children).PIDs[0])
			ctx := context.Background()

			type out struct {
				r   execclient.Result
				err error
			}
			slow := make(chan out, 1)
			go func() { r, _, err := c.Run(ctx, execclient.RunRequest{Path: "tools/slow.ts"}); slow <- out{r, err} }()
			bombed, _, err := c.Run(ctx, execclient.RunRequest{Path: "tools/bomb.ts"})
			if err != nil {
				t.Fatal(err)
			}
			if bombed.Success || bombed.Error == nil {
				t.Fatalf("the panicking run succeeded: %+v", bombed)
			}
			t.Logf("panicking run: %s: %.80s", bombed.Error.Kind, bombed.Error.Message)
			got := <-slow
			if got.err != nil || !got.r.Success || string(got.r.Result) != `"number"` {
				t.Fatalf("the run in flight did not complete: %+v %v", got.r, got.err)
			}
			// The actor still serves runs.
			if r, _, err := c.Run(ctx, execclient.RunRequest{Path: "tools/fib.ts", Args: json.RawMessage(`{"n":10}`)}); err != nil || string(r.Result) != "55" {
				t.Fatalf("after the panic: %v %+v", err, r)
			}
			mu.Lock()
			defer mu.Unlock()
			if bombed.Error.Kind != sandbox.KindInternal || !strings.Contains(bombed.Error.Message, "bug in a driver") {
				t.Fatalf("the panicking run's error: %+v", bombed.Error)
			}
			if len(events) != 1 || events[0].Action != supervisor.ActionRestart || !strings.Contains(events[0].Reason, "bug in a driver") {
				t.Fatalf("supervisor events = %+v, want one restart naming the panic", events)
			}
		})
	}
}

// Cancellation is a message: cancelling the client's context sends Cancel
// and the run ends "cancelled" and stays resumable in the journal; a Cancel
// that arrives before its Run keeps that run from starting; Cancel confirms
// whether a run was in flight; a run key in use is refused.
func TestActorCancel(t *testing.T) {
	e := newExec(t, IsolationInProcess, map[string]string{
		"tools/spin.ts": `export default async function () { await tgp.list_files('tools'); for (;;) {} }`,
		"tools/fib.ts":  fibTool,
	}, func(o *Options) { o.Limits.Timeout = time.Minute })
	j, err := journal.Open(filepath.Join(t.TempDir(), "j.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	c := startActor(t, e, ActorOptions{Journal: j})

	// Cancelling the context.
	ctx, cancel := context.WithCancel(context.Background())
	type out struct {
		r   execclient.Result
		id  string
		err error
	}
	done := make(chan out, 1)
	go func() {
		r, id, err := c.Run(ctx, execclient.RunRequest{Key: "spin-1", Path: "tools/spin.ts", Record: true})
		done <- out{r, id, err}
	}()
	waitUnfinished(t, j, 1)
	cancel()
	got := <-done
	if got.err != nil || got.r.Error == nil || !errors.Is(got.r.Error, ErrCancelled) || got.id == "" {
		t.Fatalf("cancelled run: %+v %q %v", got.r, got.id, got.err)
	}
	if runs, _ := j.Unfinished(); len(runs) != 1 || runs[0].ID != got.id {
		t.Fatalf("unfinished runs: %+v, want the cancelled one (resumable)", runs)
	}

	// Cancel (confirmed) of a run in flight, then of one that has ended.
	done2 := make(chan out, 1)
	go func() {
		r, id, err := c.Run(context.Background(), execclient.RunRequest{Key: "spin-2", Path: "tools/spin.ts", Record: true})
		done2 <- out{r, id, err}
	}()
	waitUnfinished(t, j, 2)
	// The same key while it runs is refused.
	if _, _, err := c.Run(context.Background(), execclient.RunRequest{Key: "spin-2", Path: "tools/fib.ts", Args: json.RawMessage(`{"n":3}`)}); !errors.Is(err, execclient.ErrRunKeyInUse) {
		t.Fatalf("a second run with a key in flight: %v, want ErrRunKeyInUse", err)
	}
	if found, err := c.Cancel("spin-2"); err != nil || !found {
		t.Fatalf("Cancel of a run in flight: found %v, %v", found, err)
	}
	if got := <-done2; got.err != nil || !errors.Is(got.r.Error, ErrCancelled) {
		t.Fatalf("run cancelled by Cancel: %+v %v", got.r, got.err)
	}

	// A Cancel that crossed its Run: the run never starts.
	if found, err := c.Cancel("early"); err != nil || found {
		t.Fatalf("Cancel before the Run: found %v, %v", found, err)
	}
	r, id, err := c.Run(context.Background(), execclient.RunRequest{Key: "early", Path: "tools/fib.ts", Args: json.RawMessage(`{"n":10}`), Record: true})
	if err != nil || !errors.Is(r.Error, ErrCancelled) || id != "" || r.Calls != 0 {
		t.Fatalf("run whose Cancel came first: %+v %q %v (want cancelled, never started)", r, id, err)
	}
	// Keys are reusable once their run ended.
	if r, _, err := c.Run(context.Background(), execclient.RunRequest{Key: "spin-1", Path: "tools/fib.ts", Args: json.RawMessage(`{"n":10}`)}); err != nil || string(r.Result) != "55" {
		t.Fatalf("a finished run's key: %+v %v", r, err)
	}
}

func waitUnfinished(t *testing.T, j *journal.Journal, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if runs, _ := j.Unfinished(); len(runs) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never %d unfinished runs", n)
		}
	}
}

// A run's caller is its token: the actor verifies it with the authority
// and checks it on every file access and driver call (fetch on the
// canonical URL), reports each refusal, refuses a forged token and a run
// with a token when it has no authority, and journals the caller's grants.
func TestActorCallerRights(t *testing.T) {
	e := newExec(t, IsolationInProcess, map[string]string{
		"tools/pub/read.ts": `export default async function (a: { path: string }) {
			try { return (await tgp.read_file(a.path)).length; } catch (e) { return 'refused: ' + String(e); }
		}`,
		"tools/pub/fetch.ts": `export default async function (a: { url: string }) {
			try { await tgp.fetch(a.url, {}); return 'fetched'; } catch (e) { return 'refused: ' + String(e); }
		}`,
		"tools/priv/secret.txt": "secret",
	}, func(o *Options) {
		o.Devices = map[string]driver.Device{driver.FetchDriver: driver.DeviceFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"status":200}`), nil
		})}
		o.Bindings = []Binding{FetchBinding}
	})
	auth, err := capability.NewAuthority(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(filepath.Join(t.TempDir(), "j.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var mu sync.Mutex
	var refusals []Refusal
	c := startActor(t, e, ActorOptions{Journal: j, Authority: auth, OnRefused: func(r Refusal) { mu.Lock(); refusals = append(refusals, r); mu.Unlock() }})
	grants := []capability.Grant{{Right: capability.Read, Scope: "tools/pub/"}, {Right: capability.Fetch, Scope: "https://api.example.com/v1/"}}
	tok := auth.Mint("pid:7", grants, capability.Caveats{})
	caller := &execclient.Caller{PID: 7, Name: "agent", Holder: "pid:7", Token: tok}
	run := func(c *execclient.Client, caller *execclient.Caller, tool, args string) (execclient.Result, string, error) {
		return c.Run(context.Background(), execclient.RunRequest{Path: tool, Args: json.RawMessage(args), Caller: caller, Record: true})
	}
	result := func(tool, args string) string {
		t.Helper()
		r, _, err := run(c, caller, tool, args)
		if err != nil || !r.Success {
			t.Fatalf("%s %s: %+v %v", tool, args, r, err)
		}
		return string(r.Result)
	}

	if got := result("tools/pub/read.ts", `{"path":"tools/pub/read.ts"}`); strings.HasPrefix(got, `"refused`) {
		t.Fatalf("a read in scope: %s", got)
	}
	if got := result("tools/pub/read.ts", `{"path":"tools/priv/secret.txt"}`); !strings.Contains(got, "lacks the \\\"read\\\" right") {
		t.Fatalf("a read out of scope: %s", got)
	}
	if got := result("tools/pub/fetch.ts", `{"url":"https://api.example.com/v1/users"}`); got != `"fetched"` {
		t.Fatalf("a fetch in scope: %s", got)
	}
	if got := result("tools/pub/fetch.ts", `{"url":"https://api.example.com/v1/../admin"}`); !strings.Contains(got, "fetch.fetch refused") || !strings.Contains(got, "https://api.example.com/admin") {
		t.Fatalf("a fetch escaping its scope with dot segments: %s", got)
	}
	mu.Lock()
	if len(refusals) != 2 || refusals[0].PID != 7 || refusals[0].Name != "agent" || refusals[0].Right != capability.Read || refusals[0].Resource != "tools/priv/secret.txt" ||
		refusals[1].Right != capability.Fetch || refusals[1].Resource != "https://api.example.com/admin" || !errors.Is(refusals[1].Err, capability.ErrDenied) {
		t.Fatalf("refusals = %+v", refusals)
	}
	mu.Unlock()
	// The caller's grants are journaled with the run (recovery resumes it
	// under them: CallerRights).
	_, id, _ := run(c, caller, "tools/pub/read.ts", `{"path":"tools/pub/read.ts"}`)
	meta, err := j.Get(id)
	if err != nil || meta.Caller == nil || meta.Caller.Process != "agent" || len(meta.Caller.Grants) != 2 {
		t.Fatalf("journaled caller: %+v %v", meta.Caller, err)
	}
	// A forged token (grants edited) is refused before anything runs.
	forged := tok
	forged.Grants = []capability.Grant{{Right: capability.Read}}
	if _, _, err := run(c, &execclient.Caller{PID: 7, Holder: "pid:7", Token: forged}, "tools/pub/read.ts", `{"path":"tools/priv/secret.txt"}`); !errors.Is(err, capability.ErrInvalid) {
		t.Fatalf("forged token: %v, want capability.ErrInvalid", err)
	}
	// A revoked token is refused.
	auth.RevokeHolder("pid:7")
	if _, _, err := run(c, caller, "tools/pub/read.ts", `{"path":"tools/pub/read.ts"}`); !errors.Is(err, capability.ErrRevoked) {
		t.Fatalf("revoked token: %v, want capability.ErrRevoked", err)
	}
	// An actor that requires a caller refuses a run without one.
	strict := startActor(t, e, ActorOptions{Authority: auth, RequireCaller: true})
	if _, _, err := run(strict, nil, "tools/pub/read.ts", `{"path":"tools/priv/secret.txt"}`); !errors.Is(err, execclient.ErrNoCaller) {
		t.Fatalf("no caller on a strict actor: %v, want ErrNoCaller", err)
	}
	// An actor without an authority refuses runs with a caller.
	bare := startActor(t, e, ActorOptions{})
	if _, _, err := run(bare, caller, "tools/pub/read.ts", `{}`); !errors.Is(err, execclient.ErrNoAuthority) {
		t.Fatalf("no authority: %v, want ErrNoAuthority", err)
	}
}

// A token revoked during a run refuses the run's calls from then on.
func TestActorRevokedDuringRun(t *testing.T) {
	auth, _ := capability.NewAuthority(nil, nil)
	e := newExec(t, IsolationInProcess, map[string]string{
		"tools/loop.ts": `export default async function () {
			const before = (await tgp.list_files('tools')).length;
			await tgp.revoke();
			try { await tgp.list_files('tools'); return 'not refused'; } catch (e) { return 'listed ' + before + ', then refused: ' + String(e); }
		}`,
	}, func(o *Options) {
		o.Devices = map[string]driver.Device{"hook": driver.DeviceFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			auth.RevokeHolder("pid:1") // the kernel does this when the process ends
			return json.RawMessage("null"), nil
		})}
		o.Bindings = []Binding{{Name: "revoke", Driver: "hook", Op: "revoke"}}
	})
	c := startActor(t, e, ActorOptions{Authority: auth})
	tok := auth.Mint("pid:1", []capability.Grant{{Right: capability.Read, Scope: "tools/"}}, capability.Caveats{})
	r, _, err := c.Run(context.Background(), execclient.RunRequest{Path: "tools/loop.ts", Caller: &execclient.Caller{PID: 1, Holder: "pid:1", Token: tok}})
	if err != nil || !strings.Contains(string(r.Result), "listed 1, then refused") || !strings.Contains(string(r.Result), "revoked") {
		t.Fatalf("run whose token was revoked: %s %+v %v", r.Result, r.Error, err)
	}
}

// Every message of executor.proto can cross nodes: system.CheckRemote
// passes for each (iterating the file descriptor, so a message added to the
// .proto is checked too), each survives a wire round trip, and each is
// either a request, a reply or a part listed here.
func TestMessagesCrossNodes(t *testing.T) {
	protocol := map[protoreflect.Name]protoreflect.Name{"Run": "Ran", "Cancel": "Cancelled", "Replay": "Replayed"}
	parts := []protoreflect.Name{"Limits", "Caller", "Error", "Failure", "Divergence"}
	known := map[protoreflect.Name]bool{}
	for req, rep := range protocol {
		known[req], known[rep] = true, true
	}
	for _, p := range parts {
		known[p] = true
	}
	msgs := pb.File_actors_executor_executorpb_executor_proto.Messages()
	if msgs.Len() != len(known) {
		t.Errorf("executor.proto defines %d messages, this test lists %d", msgs.Len(), len(known))
	}
	for i := range msgs.Len() {
		d := msgs.Get(i)
		if !known[d.Name()] {
			t.Errorf("message %s is not listed as a request, reply or part of the protocol", d.Name())
		}
		mt, err := protoregistry.GlobalTypes.FindMessageByName(d.FullName())
		if err != nil {
			t.Fatal(err)
		}
		m := mt.New().Interface()
		if err := system.CheckRemote(m); err != nil {
			t.Errorf("%s: %v", d.Name(), err)
		}
	}
	// Real messages survive the wire, and the actor answers decoded ones.
	tok := capability.Token{Holder: "pid:1", Grants: []capability.Grant{{Right: capability.Read, Scope: "tools/"}}}
	run := &pb.Run{RunKey: "k", Path: "tools/fib.ts", Args: []byte(`{"n":10}`), Limits: limitsToPB(Limits{Timeout: time.Second}), Caller: callerToPB(&execclient.Caller{PID: 1, Holder: "pid:1", Token: tok})}
	b, err := proto.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	var back pb.Run
	if err := proto.Unmarshal(b, &back); err != nil || !proto.Equal(run, &back) {
		t.Fatalf("Run round trip: %v", err)
	}
	if got, err := capability.Decode(back.GetCaller().GetToken()); err != nil || got.Holder != "pid:1" || len(got.Grants) != 1 {
		t.Fatalf("the token through the wire: %+v %v", got, err)
	}
	e := newExec(t, IsolationInProcess, map[string]string{"tools/fib.ts": fibTool})
	sys := quietSystem()
	pid := sys.Root.Spawn(Props(e, ActorOptions{}))
	defer func() { _ = sys.Root.StopFuture(pid).Wait() }()
	back.Caller = nil
	// From another node a Run without its caller is refused; the node's
	// own (a system.Local) runs.
	res, err := sys.Root.RequestFuture(pid, &back, time.Minute).Result()
	if err != nil {
		t.Fatal(err)
	}
	if f := res.(*pb.Ran).GetFailure(); f.GetCode() != system.CodeUnauthenticated {
		t.Fatalf("a Run without a caller from outside the node: %v, want failure %q", res, system.CodeUnauthenticated)
	}
	res, err = sys.Root.RequestFuture(pid, &system.Local{Msg: &back}, time.Minute).Result()
	if err != nil {
		t.Fatal(err)
	}
	ran := res.(*pb.Ran)
	if b, err = proto.Marshal(ran); err != nil {
		t.Fatal(err)
	}
	var ranBack pb.Ran
	if err := proto.Unmarshal(b, &ranBack); err != nil || string(resultOf(&ranBack).Result) != "55" || ranBack.GetDurationNs() <= 0 {
		t.Fatalf("Ran round trip: %+v %v", &ranBack, err)
	}
	// A Replay's patched source keeps its presence on the wire: an empty
	// new version is not the recorded source.
	if b, err = proto.Marshal(&pb.Replay{RunId: "r", Patched: []byte{}}); err != nil {
		t.Fatal(err)
	}
	var replayBack pb.Replay
	if err := proto.Unmarshal(b, &replayBack); err != nil || replayBack.Patched == nil {
		t.Fatalf("Replay round trip lost an empty patched source: %+v %v", &replayBack, err)
	}
	res, err = sys.Root.RequestFuture(pid, &pb.Cancel{RunKey: "none"}, time.Minute).Result()
	if err != nil || res.(*pb.Cancelled).GetFound() {
		t.Fatalf("Cancel: %+v %v", res, err)
	}
}
