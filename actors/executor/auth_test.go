package executor

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	pb "github.com/agentos-run/agentos/actors/executor/executorpb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/transpile"
)

// A Run from another node (not a system.Local) runs only for a caller
// whose token grants exec on the tool, as exec_tool checks locally; the
// token is then verified as every caller's.
func TestRemoteRunNeedsExecOnTheTool(t *testing.T) {
	e := newExec(t, IsolationInProcess, map[string]string{"tools/fib.ts": fibTool})
	auth, err := capability.New(capability.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sys := quietSystem()
	pid := sys.Root.Spawn(Props(e, ActorOptions{Authority: auth, RequireCaller: true}))
	defer func() { _ = sys.Root.StopFuture(pid).Wait() }()
	run := func(path string, grants ...capability.Grant) *pb.Ran {
		tok := auth.Mint("pid:1", grants, capability.Caveats{})
		m := &pb.Run{RunKey: execclient.NewRunKey(), Path: path, Args: []byte(`{"n":10}`), Caller: callerToPB(&execclient.Caller{PID: 1, Holder: "pid:1", Token: tok})}
		res, err := sys.Root.RequestFuture(pid, m, time.Minute).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res.(*pb.Ran)
	}
	if r := run("tools/fib.ts", capability.Grant{Right: capability.Read, Scope: "tools/"}); r.GetFailure().GetCode() != "denied" {
		t.Errorf("a remote Run without exec: %v, want failure denied", r)
	}
	if r := run("tools/fib.ts@0000", capability.Grant{Right: capability.Exec, Scope: "tools/other.ts"}); r.GetFailure().GetCode() != "denied" {
		t.Errorf("a remote Run of a version without exec on its tool: %v, want failure denied", r)
	}
	if r := run("tools/fib.ts", capability.Grant{Right: capability.Exec, Scope: "tools/"}, capability.Grant{Right: capability.Read, Scope: "tools/"}); r.GetFailure() != nil || string(resultOf(r).Result) != "55" {
		t.Errorf("a remote Run with exec: %v, want 55", r)
	}
	if got := system.CodeUnauthenticated; execclient.FailureCodes.CodeOf(system.ErrUnauthenticated) != got {
		t.Errorf("ErrUnauthenticated crosses as %q, want %q", execclient.FailureCodes.CodeOf(system.ErrUnauthenticated), got)
	}
}

// Issue 24: a Run from another node is judged by this node's approval
// gate (ActorOptions.AdmitRemote) as exec_tool judges a local one: a
// member holding a caller's exec token cannot run an unapproved high-risk
// tool by sending Run straight to the executor. The run then executes
// exactly the content judged; a Run of this node's own is not judged here
// (its exec_tool did).
func TestRemoteRunIsJudgedByTheApprovalGate(t *testing.T) {
	e := newExec(t, IsolationInProcess, map[string]string{"tools/fib.ts": fibTool})
	auth, err := capability.New(capability.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var judged []string
	verdict := func(string) (Admitted, error) { return Admitted{}, nil }
	admit := func(_ context.Context, path, token string) (Admitted, error) {
		judged = append(judged, path)
		if _, err := capability.Decode(token); err != nil {
			t.Errorf("AdmitRemote got a caller token that does not decode: %v", err)
		}
		return verdict(path)
	}
	sys := quietSystem()
	pid := sys.Root.Spawn(Props(e, ActorOptions{Authority: auth, RequireCaller: true, AdmitRemote: admit}))
	defer func() { _ = sys.Root.StopFuture(pid).Wait() }()
	tok := auth.Mint("pid:1", []capability.Grant{{Right: capability.Exec, Scope: "tools/"}, {Right: capability.Read, Scope: "tools/"}}, capability.Caveats{})
	run := func(msg any) *pb.Ran {
		res, err := sys.Root.RequestFuture(pid, msg, time.Minute).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res.(*pb.Ran)
	}
	newRun := func() *pb.Run {
		return &pb.Run{RunKey: execclient.NewRunKey(), Path: "tools/fib.ts", Args: []byte(`{"n":10}`), Caller: callerToPB(&execclient.Caller{PID: 1, Holder: "pid:1", Token: tok})}
	}

	verdict = func(p string) (Admitted, error) {
		return Admitted{}, fmt.Errorf("approval_required: %s is rated high and not approved", p)
	}
	if r := run(newRun()); r.GetFailure() == nil || !strings.Contains(r.GetFailure().GetMessage(), "not approved") || r.GetSuccess() {
		t.Fatalf("a remote Run the gate refuses: %v, want refused with the gate's reason", r)
	}
	if len(judged) != 1 || judged[0] != "tools/fib.ts" {
		t.Fatalf("AdmitRemote asked for %v, want tools/fib.ts once", judged)
	}
	// A local Run is not judged again here.
	if r := run(&system.Local{Msg: newRun()}); r.GetFailure() != nil || string(resultOf(r).Result) != "55" {
		t.Fatalf("a local Run: %v, want 55", r)
	}
	if len(judged) != 1 {
		t.Fatalf("a local Run was judged by AdmitRemote: %v", judged)
	}
	// Cleared for another content than the file holds: not run.
	verdict = func(string) (Admitted, error) { return Admitted{Hash: "0123abcd", Gated: true}, nil }
	if r := run(newRun()); r.GetFailure().GetCode() != "stale_tool" {
		t.Fatalf("a remote Run cleared for other content: %v, want stale_tool", r)
	}
	// The bytes a sender carries (its one read, pb.Run.source): a local
	// Run executes exactly them, held to their hash; another node's are
	// never run, its Run is held to this node's file.
	carried := []byte("export default function f(a: { n: number }): number { return a.n + 1; }\n")
	local := newRun()
	local.Hash, local.Source = transpile.Hash(carried), carried
	if r := run(&system.Local{Msg: local}); r.GetFailure() != nil || string(resultOf(r).Result) != "11" {
		t.Fatalf("a local Run with its source: %v, want 11 (the carried bytes, not the file's 55)", r)
	}
	local = newRun()
	local.Hash, local.Source = "0123abcd", carried
	if r := run(&system.Local{Msg: local}); r.GetFailure().GetCode() != "stale_tool" {
		t.Fatalf("a local Run whose source is not its hash: %v, want stale_tool", r)
	}
	verdict = func(string) (Admitted, error) { return Admitted{Hash: transpile.Hash(carried), Gated: true}, nil }
	remote := newRun()
	remote.Source = carried
	if r := run(remote); r.GetFailure().GetCode() != "stale_tool" {
		t.Fatalf("a remote Run carrying other bytes than this node's file: %v, want stale_tool", r)
	}
	// Cleared: it runs.
	verdict = func(string) (Admitted, error) { return Admitted{}, nil }
	if r := run(newRun()); r.GetFailure() != nil || string(resultOf(r).Result) != "55" {
		t.Fatalf("a remote Run the gate clears: %v, want 55", r)
	}
}
