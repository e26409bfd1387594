package executor

import (
	"testing"
	"time"

	pb "github.com/agentos-run/agentos/actors/executor/executorpb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
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
		m := &pb.Run{RunKey: NewRunKey(), Path: path, Args: []byte(`{"n":10}`), Caller: callerToPB(&Caller{PID: 1, Holder: "pid:1", Token: tok})}
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
	if got := system.CodeUnauthenticated; failureCodes.CodeOf(system.ErrUnauthenticated) != got {
		t.Errorf("ErrUnauthenticated crosses as %q, want %q", failureCodes.CodeOf(system.ErrUnauthenticated), got)
	}
}
