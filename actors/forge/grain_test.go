package forge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/actors/forge"
	pb "github.com/agentos-run/agentos/actors/forge/forgepb"
	"github.com/agentos-run/agentos/actors/forge/forgerun"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/journal"
)

const fibSpec = "a tool that returns the n-th Fibonacci number"

// startGrain spawns a forge actor for e and a grain forging through it.
func startGrain(t *testing.T, e env, pending func(context.Context, string) (string, bool, error)) *actor.PID {
	t.Helper()
	c := startForge(t, e)
	pid := e.sys.Root.Spawn(forge.GrainProps(forge.GrainOptions{Forge: *c, Pending: pending, Logger: quiet}))
	t.Cleanup(func() { _ = e.sys.Root.StopFuture(pid).Wait() })
	return pid
}

func askGrain(t *testing.T, e env, pid *actor.PID, key string) *pb.Done {
	t.Helper()
	reply, err := system.Ask(context.Background(), e.sys.Root, pid, &system.Local{Msg: &pb.Run{RunKey: key, Spec: fibSpec}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return reply.(*pb.Done)
}

// gate holds the scripted model's first answer until released, so that
// several Runs arrive while the forge waits on the model.
func gate(step llmtest.Step) (llmtest.Step, chan struct{}, chan struct{}) {
	asked, release := make(chan struct{}), make(chan struct{})
	step.Check = func(llmtest.Received) error { close(asked); <-release; return nil }
	return step, asked, release
}

// Callers asking one spec's grain at the same moment cause one forge: the
// model is asked once and every caller gets the same tool; a later Run is
// answered with the kept tool, without the model.
func TestGrainOneForgeForConcurrentCallers(t *testing.T) {
	step, asked, release := gate(submit(fibCode))
	srv := llmtest.NewServer([]llmtest.Step{step})
	defer srv.Close()
	e := newEnv(t, srv, t.TempDir())
	pid := startGrain(t, e, nil)

	const callers = 5
	dones := make(chan *pb.Done, callers)
	go func() { dones <- askGrain(t, e, pid, "first") }()
	<-asked // the forge is waiting on the model
	// The joiners' Runs are in the grain's mailbox before the model is
	// released: the forge's landing, posted after the release, comes after
	// them (a mailbox is FIFO), so each one joins the flight in progress.
	joiners := make([]*actor.Future, 0, callers-1)
	for i := 1; i < callers; i++ {
		joiners = append(joiners, e.sys.Root.RequestFuture(pid, &system.Local{Msg: &pb.Run{Spec: fibSpec}}, time.Minute))
	}
	close(release)
	for _, f := range joiners {
		go func() {
			reply, err := f.Result()
			if err != nil {
				reply = &pb.Done{Failure: &pb.Failure{Code: "ask", Message: err.Error()}}
			}
			dones <- reply.(*pb.Done)
		}()
	}
	var path, commitOrRun string
	for range callers {
		d := <-dones
		if d.GetFailure() != nil {
			t.Fatalf("failure: %v", d.GetFailure())
		}
		if path == "" {
			path, commitOrRun = d.GetResult().GetPath(), d.GetResult().GetRunId()
		}
		if d.GetResult().GetPath() != path || d.GetResult().GetRunId() != commitOrRun || d.GetResult().GetReused() {
			t.Fatalf("callers got different forges: %v vs %s %s", d.GetResult(), path, commitOrRun)
		}
	}
	if n := srv.Requests(); n != 1 {
		t.Fatalf("model asked %d times for one spec, want 1", n)
	}
	d := askGrain(t, e, pid, "later")
	if !d.GetResult().GetReused() || d.GetResult().GetPath() != path {
		t.Fatalf("a later Run = %v, want the kept tool %s as a reuse", d.GetResult(), path)
	}
	if n := srv.Requests(); n != 1 {
		t.Fatalf("model asked %d times, want 1", n)
	}
	if srv.Err() != nil {
		t.Fatal(srv.Err())
	}
}

// A caller that cancels leaves the forge to the others; the forge is
// cancelled (and stays resumable) only when its last caller has gone.
func TestGrainCancelLeavesForgeToOthers(t *testing.T) {
	step, asked, release := gate(submit(fibCode))
	srv := llmtest.NewServer([]llmtest.Step{step})
	defer srv.Close()
	e := newEnv(t, srv, t.TempDir())
	pid := startGrain(t, e, nil)

	// The first caller's future is answered nothing once it cancelled.
	_ = e.sys.Root.RequestFuture(pid, &system.Local{Msg: &pb.Run{RunKey: "a", Spec: fibSpec}}, time.Minute)
	<-asked
	second := make(chan *pb.Done, 1)
	go func() { second <- askGrain(t, e, pid, "b") }()
	time.Sleep(50 * time.Millisecond)
	e.sys.Root.Send(pid, &system.Local{Msg: &pb.Cancel{RunKey: "a"}})
	close(release)
	if d := <-second; d.GetFailure() != nil || d.GetResult().GetPath() != "tools/math/fib.ts" {
		t.Fatalf("the caller that stayed got %v", d)
	}
	if runs, _ := e.j.Unfinished(); len(runs) != 0 {
		t.Fatalf("the forge was cancelled although a caller stayed: unfinished %+v", runs)
	}
}

// The next activation of a spec resumes the forge a dead node left
// unfinished (found through Pending): the journaled model answer is
// replayed, not asked again.
func TestGrainResumesPendingForge(t *testing.T) {
	root := t.TempDir()
	srv := llmtest.NewServer([]llmtest.Step{submit(fibCode)})
	defer srv.Close()
	e := newEnv(t, srv, root)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A forge interrupted right after its model answer, as by a crash.
	if _, err := e.f.Forge(ctx, fibSpec, func(llm.Usage) error { cancel(); return nil }); !errors.Is(err, context.Canceled) {
		t.Logf("interrupted forge: %v", err)
	}
	runs, _ := e.j.Unfinished()
	if len(runs) != 1 || srv.Requests() != 1 {
		t.Fatalf("setup: unfinished %+v, %d model requests", runs, srv.Requests())
	}
	var asked []string
	pid := startGrain(t, e, func(_ context.Context, hash string) (string, bool, error) {
		asked = append(asked, hash)
		return runs[0].ID, true, nil
	})
	d := askGrain(t, e, pid, "k")
	if d.GetFailure() != nil || d.GetResult().GetPath() != "tools/math/fib.ts" || d.GetResult().GetRunId() != runs[0].ID {
		t.Fatalf("resumed = %v, want the forge run %s finished", d, runs[0].ID)
	}
	if n := srv.Requests(); n != 1 {
		t.Fatalf("the model was asked %d times in all, want 1 (the resumed forge must replay the journaled answer)", n)
	}
	if len(asked) != 1 || asked[0] != forge.SpecHash(fibSpec) {
		t.Fatalf("Pending asked for %v, want the spec's hash", asked)
	}
}

func TestSpecHashFoldsWhiteSpaceOnly(t *testing.T) {
	a := forge.SpecHash("  a tool\tthat  returns\n fib ")
	if a != forge.SpecHash("a tool that returns fib") {
		t.Fatal("white space changed the hash")
	}
	if a == forge.SpecHash("A tool that returns fib") {
		t.Fatal("case did not change the hash")
	}
}

// homeCharges is a HomeCharger recording where it charged.
type homeCharges struct {
	charges
	at []string
}

func (c *homeCharges) ChargeAt(ctx context.Context, home string, pid uint64, m capability.Meter, amount float64) error {
	c.mu.Lock()
	c.at = append(c.at, fmt.Sprintf("%s %d %s %g", home, pid, m, amount))
	c.mu.Unlock()
	return nil
}

// A caller living on another node (Caller.Home) is charged on its home
// node through a HomeCharger, never on the forge's node; a Charger that
// cannot reach it fails the forge instead of charging the wrong account.
func TestForgeChargesTheCallersHomeNode(t *testing.T) {
	step := submit(fibCode)
	step.Usage = llm.Usage{PromptTokens: 30, CompletionTokens: 12, TotalTokens: 42}
	auth := mustAuthority(t)
	caller := &execclient.Caller{PID: 7, Holder: "pid:7", Home: "127.0.0.1:7001",
		Token: auth.Mint("pid:7", []capability.Grant{{Right: capability.Read, Scope: "tools/"}, {Right: capability.Write, Scope: "tools/"}, {Right: capability.Exec, Scope: "tools/"}}, capability.Caveats{})}

	srv := llmtest.NewServer([]llmtest.Step{step})
	defer srv.Close()
	hc := &homeCharges{}
	c := startForge(t, newEnvWith(t, srv, t.TempDir(), envOptions{auth: auth, charger: hc}))
	if _, err := c.Forge(context.Background(), fibSpec, caller); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(hc.at, ", "); got != "127.0.0.1:7001 7 llm_tokens 42, 127.0.0.1:7001 7 cost_usd 0" || len(hc.got) != 0 {
		t.Fatalf("charged at home %q, locally %q; want both meters at the caller's home only", got, hc.got)
	}

	srv2 := llmtest.NewServer([]llmtest.Step{step})
	defer srv2.Close()
	plain := &charges{}
	c2 := startForge(t, newEnvWith(t, srv2, t.TempDir(), envOptions{auth: auth, charger: plain, attempts: 1}))
	if _, err := c2.Forge(context.Background(), fibSpec, caller); !errors.Is(err, forge.ErrOptions) || !strings.Contains(err.Error(), "127.0.0.1:7001") {
		t.Fatalf("a plain Charger for a remote caller: %v, want ErrOptions naming the home", err)
	}
	if len(plain.got) != 0 {
		t.Fatalf("charged the wrong node: %q", plain.got)
	}
}

// A forge that died after it kept its tool (committed) but before its run
// ended is resumed to the end: the tool at its path is its own (the same
// code), not "another tool", and the model is not asked again.
func TestResumeAfterTheToolWasKept(t *testing.T) {
	root := t.TempDir()
	srv := llmtest.NewServer([]llmtest.Step{submit(fibCode)})
	defer srv.Close()
	e := newEnv(t, srv, root)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := e.f.Forge(ctx, fibSpec, func(llm.Usage) error { cancel(); return nil }); !errors.Is(err, context.Canceled) {
		t.Logf("interrupted forge: %v", err)
	}
	runs, _ := e.j.Unfinished()
	if len(runs) != 1 {
		t.Fatalf("setup: unfinished %+v", runs)
	}
	// What the dead node had done before it died: the tool kept.
	if err := e.jl.WriteFile("tools/math/fib.ts", []byte(fibCode)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reg.Register("tools/math/fib.ts", []byte(fibCode)); err != nil {
		t.Fatal(err)
	}
	res, err := e.f.Resume(context.Background(), runs[0].ID, nil)
	if err != nil || res.Path != "tools/math/fib.ts" || len(res.Attempts) != 1 || !res.Attempts[0].Passed {
		t.Fatalf("resumed: %+v %v", res, err)
	}
	if n := srv.Requests(); n != 1 {
		t.Fatalf("model asked %d times, want 1", n)
	}
}

// A forge that died after its second answer, with its tool kept since (by
// the dead run, or pulled), resumes: its first attempt replays as judged
// then (the path was free), though the registry now holds the kept tool,
// and the model is not asked again.
func TestResumeReplaysTheTakenCheck(t *testing.T) {
	root := t.TempDir()
	srv := llmtest.NewServer([]llmtest.Step{submit(buggyCode), submit(fibCode)})
	defer srv.Close()
	e := newEnv(t, srv, root)
	ctx, cancel := context.WithCancel(context.Background())
	answers := 0
	if _, err := e.f.Forge(ctx, fibSpec, func(llm.Usage) error {
		if answers++; answers == 2 {
			cancel()
		}
		return nil
	}); !errors.Is(err, context.Canceled) {
		t.Logf("interrupted forge: %v", err)
	}
	runs, _ := e.j.Unfinished()
	if len(runs) != 1 || srv.Requests() != 2 {
		t.Fatalf("setup: unfinished %+v, %d requests", runs, srv.Requests())
	}
	if err := e.jl.WriteFile("tools/math/fib.ts", []byte(fibCode)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reg.Register("tools/math/fib.ts", []byte(fibCode)); err != nil {
		t.Fatal(err)
	}
	res, err := e.f.Resume(context.Background(), runs[0].ID, nil)
	if err != nil || len(res.Attempts) != 2 || res.Attempts[0].Passed || !res.Attempts[1].Passed {
		t.Fatalf("resumed: %+v %v", res, err)
	}
	if n := srv.Requests(); n != 2 {
		t.Fatalf("model asked %d times, want 2", n)
	}
}

// Issue 24: a caller whose request caused a forge is told it forged, also
// when its request comes again (its first answer was lost with a node, and
// the cluster's Call asks again): at the same activation, and at a new one
// that finds the finished forge in the journal. Other requests are told
// they reused it.
func TestGrainRetryIsToldItForged(t *testing.T) {
	srv := llmtest.NewServer([]llmtest.Step{submit(fibCode)})
	defer srv.Close()
	e := newEnv(t, srv, t.TempDir())
	pid := startGrain(t, e, nil)
	if d := askGrain(t, e, pid, "caller-1"); d.GetFailure() != nil || d.GetResult().GetReused() {
		t.Fatalf("the forging request: %v", d)
	}
	if d := askGrain(t, e, pid, "caller-1"); d.GetResult().GetReused() || len(d.GetResult().GetAttempts()) == 0 {
		t.Fatalf("the forging request asked again is told it reused: %v", d)
	}
	if d := askGrain(t, e, pid, "caller-2"); !d.GetResult().GetReused() {
		t.Fatalf("another request is told it forged: %v", d)
	}

	// A new activation (the first one's node died): Finished, from the
	// journal, names the request that caused the forge.
	finished := func(context.Context, string) (forge.Result, string, bool, error) {
		runs, err := e.j.Runs()
		if err != nil {
			return forge.Result{}, "", false, err
		}
		for _, r := range runs {
			var res forge.Result
			if r.Kind == forge.Kind && r.Status == "ok" && json.Unmarshal(r.Result, &res) == nil {
				res.RunID = r.ID
				return res, forgerun.RequestOf(r), true, nil
			}
		}
		return forge.Result{}, "", false, nil
	}
	again := e.sys.Root.Spawn(forge.GrainProps(forge.GrainOptions{Forge: *startForge(t, e), Finished: finished, Logger: quiet}))
	t.Cleanup(func() { _ = e.sys.Root.StopFuture(again).Wait() })
	if d := askGrain(t, e, again, "caller-1"); d.GetFailure() != nil || d.GetResult().GetReused() {
		t.Fatalf("the forging request at a new activation: %v, want its forge (not a reuse)", d)
	}
	if d := askGrain(t, e, again, "caller-3"); !d.GetResult().GetReused() {
		t.Fatalf("a new request at a new activation: %v, want a reuse", d)
	}
	if srv.Requests() != 1 {
		t.Fatalf("model requests: %d, want 1", srv.Requests())
	}
}

// endedRun waits until the journal holds a forge run that ended, and
// returns it.
func endedRun(t *testing.T, e env) journal.RunMeta {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		runs, err := e.j.Runs()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.Kind == forge.Kind && r.Status != journal.StatusRunning {
				return r
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no forge run ended within a minute")
	return journal.RunMeta{}
}

// Issue 24: a caller's attempt is bounded (the cluster's Request re-sends
// the Run every RequestTimeout), so a forge that outlives the attempt
// answers a future that has gone. The caller's next attempt MUST get the
// forge's outcome, also when the forge failed: never a second forge (the
// paid model asked again) for one request.
func TestGrainRetryAfterAFailedForgeIsAnsweredItsFailure(t *testing.T) {
	step, asked, release := gate(submit(buggyCode))
	srv := llmtest.NewServer([]llmtest.Step{step})
	defer srv.Close()
	e := newEnvWith(t, srv, t.TempDir(), envOptions{attempts: 1})
	pid := startGrain(t, e, nil)

	// The first attempt ends (its bound) while the forge waits on the model.
	first := e.sys.Root.RequestFuture(pid, &system.Local{Msg: &pb.Run{RunKey: "k", Spec: fibSpec}}, 200*time.Millisecond)
	<-asked
	if _, err := first.Result(); err == nil {
		t.Fatal("setup: the first attempt was answered while the model was held")
	}
	close(release)
	if r := endedRun(t, e); r.Status != journal.StatusFailed {
		t.Fatalf("setup: the forge ended %s, want failed", r.Status)
	}
	// The answer went to the gone attempt; the caller asks again.
	d := askGrain(t, e, pid, "k")
	if !errors.Is(forge.ErrorOfDone(d), forge.ErrGaveUp) {
		t.Fatalf("the request asked again after its forge failed got %v, want that forge's failure (gave_up)", d)
	}
	if n := srv.Requests(); n != 1 {
		t.Fatalf("the model was asked %d times for one request, want 1: the retry forged again", n)
	}
}

// Issue 24: a request asked again at a new activation of its spec (the
// node that hosted its forge died after the forge failed) is answered the
// failure the journal recorded for it, with its code, not forged again;
// another request forges anew.
func TestGrainNewActivationAnswersTheRequestsFailure(t *testing.T) {
	srv := llmtest.NewServer([]llmtest.Step{submit(buggyCode), submit(fibCode)})
	defer srv.Close()
	e := newEnvWith(t, srv, t.TempDir(), envOptions{attempts: 1})
	pid := startGrain(t, e, nil)
	if d := askGrain(t, e, pid, "caller-1"); !errors.Is(forge.ErrorOfDone(d), forge.ErrGaveUp) {
		t.Fatalf("setup: the forge = %v, want gave_up", d)
	}
	failed := func(_ context.Context, hash, request string) (error, bool, error) {
		runs, err := e.j.Runs()
		if err != nil {
			return nil, false, err
		}
		for _, r := range runs {
			if s, ok := forgerun.SpecOf(r); ok && forge.SpecHash(s) == hash && forgerun.RequestOf(r) == request {
				if ferr := forge.FailureOf(r); ferr != nil {
					return ferr, true, nil
				}
			}
		}
		return nil, false, nil
	}
	again := e.sys.Root.Spawn(forge.GrainProps(forge.GrainOptions{Forge: *startForge(t, e), Failed: failed, Logger: quiet}))
	t.Cleanup(func() { _ = e.sys.Root.StopFuture(again).Wait() })
	if d := askGrain(t, e, again, "caller-1"); !errors.Is(forge.ErrorOfDone(d), forge.ErrGaveUp) {
		t.Fatalf("the failed request asked again at a new activation: %v, want its recorded failure (gave_up)", d)
	}
	if n := srv.Requests(); n != 1 {
		t.Fatalf("model requests: %d, want 1", n)
	}
	if d := askGrain(t, e, again, "caller-2"); d.GetFailure() != nil || d.GetResult().GetPath() == "" {
		t.Fatalf("a new request: %v, want a forge", d)
	}
}
