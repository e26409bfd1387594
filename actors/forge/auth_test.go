package forge_test

import (
	"context"
	"strings"
	"testing"
	"time"

	epb "github.com/agentos-run/agentos/actors/executor/executorpb"
	"github.com/agentos-run/agentos/actors/forge"
	pb "github.com/agentos-run/agentos/actors/forge/forgepb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
)

// Issue 24: a forge started by a peer with no caller asked the node's paid
// model and charged nothing. A grain (reached from every node) and the
// forge actor (its own node's only) refuse a Run without a valid caller,
// or whose caller lacks what forge_tool needs (llm, write on tools/); the
// model is never asked.
func TestForgeRefusesRunsWithoutAValidCaller(t *testing.T) {
	srv := llmtest.NewServer(nil)
	defer srv.Close()
	e := newEnv(t, srv, t.TempDir())
	auth := mustAuthority(t)
	c := startForge(t, e)
	grain := e.sys.Root.Spawn(forge.GrainProps(forge.GrainOptions{Forge: *c, Logger: quiet, Authority: auth}))
	t.Cleanup(func() { _ = e.sys.Root.StopFuture(grain).Wait() })

	other := mustAuthority(t)
	caller := func(a *capability.Authority, grants ...capability.Grant) *epb.Caller {
		return &epb.Caller{Pid: 7, Holder: "pid:7", Token: a.Mint("pid:7", grants, capability.Caveats{}).Encode()}
	}
	forgeRights := []capability.Grant{{Right: capability.LLM}, {Right: capability.Write, Scope: "tools/"}}
	for _, tc := range []struct {
		name   string
		caller *epb.Caller
		code   string
	}{
		{"no caller", nil, system.CodeUnauthenticated},
		{"a token of another key", caller(other, forgeRights...), system.CodeUnauthenticated},
		{"a caller naming another holder", &epb.Caller{Pid: 8, Holder: "pid:8", Token: caller(auth, forgeRights...).GetToken()}, system.CodeUnauthenticated},
		{"no llm right", caller(auth, capability.Grant{Right: capability.Write, Scope: "tools/"}), "denied"},
		{"no write on tools/", caller(auth, capability.Grant{Right: capability.LLM}), "denied"},
	} {
		res, err := system.Ask(context.Background(), e.sys.Root, grain, &pb.Run{RunKey: "k", Spec: fibSpec, Caller: tc.caller}, time.Minute)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if f := res.(*pb.Done).GetFailure(); f.GetCode() != tc.code {
			t.Errorf("grain Run with %s: %v, want failure %q", tc.name, f, tc.code)
		} else {
			t.Logf("grain Run with %s: %s", tc.name, f.GetMessage())
		}
	}
	// The forge actor serves its own node only: a raw Run (as from another
	// node) is refused even with a valid caller.
	res, err := system.Ask(context.Background(), e.sys.Root, c.PID, &pb.Run{RunKey: "k", Spec: fibSpec, Caller: caller(auth, forgeRights...)}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if f := res.(*pb.Done).GetFailure(); f.GetCode() != system.CodeUnauthenticated || !strings.Contains(f.GetMessage(), "grain") {
		t.Errorf("forge actor Run from outside the node: %v, want %q naming the grain", f, system.CodeUnauthenticated)
	}
	if n := srv.Requests(); n != 0 {
		t.Errorf("the model was asked %d times for refused forges", n)
	}
	if runs, _ := e.j.Runs(); len(runs) != 0 {
		t.Errorf("refused forges left journal runs: %+v", runs)
	}
}
