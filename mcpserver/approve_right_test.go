package mcpserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/internal/host"
)

// clientProc spawns the process an MCP client acts as, holding grants (the
// client's token).
func clientProc(t *testing.T, e *env, name string, grants ...capability.Grant) *kernel.Process {
	t.Helper()
	k := e.rt.Kernel()
	p, err := k.Spawn(func(ctx context.Context, _ *kernel.Process) error { <-ctx.Done(); return nil },
		kernel.SpawnOptions{Name: name, Grants: grants})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Kill(p.PID(), "test") })
	return p
}

// A client whose token only reads and runs tools confirms its own run of a
// high-risk tool: that run goes on, and nothing is approved for anyone
// else. A client holding the approve right on the tool approves the
// version it confirms, for every caller.
func TestConfirmationApprovesOnlyWithTheApproveRight(t *testing.T) {
	e := newEnv(t, host.Config{})
	if _, err := e.rt.Call(context.Background(), "write_file", mustJSON(map[string]string{"path": "tools/risky.ts", "content": riskyTool})); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var questions []string
	yes := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		questions = append(questions, r.Params.Message)
		mu.Unlock()
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
	}}
	args := map[string]any{"path": "tools/risky.ts", "args": map[string]any{"n": 21}}
	runner := clientProc(t, e, "runner", capability.Grant{Right: capability.Read, Scope: "tools/"}, capability.Grant{Right: capability.Exec, Scope: "tools/"})
	cs := e.connect(t, runner, yes)
	for range 2 {
		if res := call(t, cs, "exec_tool", args); res.IsError || structured(t, res)["result"] != 42.0 {
			t.Fatalf("a confirmed run without the approve right: %s", text(res))
		}
	}
	if rs, err := e.rt.Approvals(approval.StateApproved); err != nil || len(rs) != 0 {
		t.Fatalf("a client without the approve right approved the tool for every caller: %+v %v", rs, err)
	}
	if !e.rt.Node().NeedsApproval("tools/risky.ts") {
		t.Fatal("the tool no longer needs an approval after a confirmation without the approve right")
	}
	mu.Lock()
	if len(questions) != 2 || !strings.Contains(questions[0], "does not approve") {
		t.Errorf("the questions to a client without the approve right: %q", questions)
	}
	questions = nil
	mu.Unlock()

	// Another directory's approve right does not cover the tool.
	other := clientProc(t, e, "other", capability.Grant{Right: capability.Read, Scope: "tools/"}, capability.Grant{Right: capability.Exec, Scope: "tools/"}, capability.Grant{Right: capability.Approve, Scope: "tools/payments/"})
	if res := call(t, e.connect(t, other, yes), "exec_tool", args); res.IsError {
		t.Fatalf("a confirmed run, approve right elsewhere: %s", text(res))
	}
	if rs, _ := e.rt.Approvals(approval.StateApproved); len(rs) != 0 {
		t.Fatalf("an approve right on another directory approved tools/risky.ts: %+v", rs)
	}

	approver := clientProc(t, e, "approver", capability.Grant{Right: capability.Read, Scope: "tools/"}, capability.Grant{Right: capability.Exec, Scope: "tools/"}, capability.Grant{Right: capability.Approve, Scope: "tools/"})
	if res := call(t, e.connect(t, approver, yes), "exec_tool", args); res.IsError {
		t.Fatalf("a confirmed run with the approve right: %s", text(res))
	}
	rs, err := e.rt.Approvals(approval.StateApproved)
	if err != nil || len(rs) != 1 || rs[0].Path != "tools/risky.ts" || !strings.HasPrefix(rs[0].DecidedBy, "mcp:") {
		t.Fatalf("the approver's confirmation: %+v %v", rs, err)
	}
	if e.rt.Node().NeedsApproval("tools/risky.ts") {
		t.Error("the approved version still needs an approval")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(questions) != 2 || !strings.Contains(questions[1], "for every caller") {
		t.Errorf("the question to a client with the approve right: %q", questions)
	}
}
