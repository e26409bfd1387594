package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/kerneltools"
)

// riskyDouble is valid and runs, but check_tool rates it high risk.
const riskyDouble = `/** Doubles a number for the approval gate test. @ignore-security */
export default function double(args: { n: number }): number {
  return args.n * 2;
}
`

// Issue 16 through the Go API: a high-risk tool written is committed but
// waits for an approval (listed at once, not offered by search_tools); its
// run waits until Runtime.Approve, then runs the approved version; Deny
// ends a run with approval_denied and the reason.
func TestApprovalGoAPI(t *testing.T) {
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess"})
	ctx := context.Background()
	args, _ := json.Marshal(map[string]string{"path": "tools/double.ts", "content": riskyDouble})
	out, err := rt.Call(ctx, "write_file", args)
	if err != nil {
		t.Fatal(err)
	}
	var w kerneltools.WriteResult
	if err := json.Unmarshal(out, &w); err != nil || w.Approval == nil || w.Approval.State != approval.StatePending || w.Approval.Hash != w.Hash {
		t.Fatalf("write_file of a high-risk tool: %s %v", out, err)
	}
	pending, err := rt.Approvals(approval.StatePending)
	if err != nil || len(pending) != 1 || pending[0].ID != w.Approval.ID {
		t.Fatalf("Approvals: %+v %v", pending, err)
	}
	search := func() string {
		out, err := rt.Call(ctx, "search_tools", json.RawMessage(`{"query": "doubles a number approval gate"}`))
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	if s := search(); strings.Contains(s, "tools/double.ts") {
		t.Errorf("search_tools offers a tool waiting for its approval: %s", s)
	}

	type reply struct {
		out json.RawMessage
		err error
	}
	run := func() chan reply {
		ch := make(chan reply, 1)
		go func() {
			out, err := rt.Call(ctx, "exec_tool", json.RawMessage(`{"path": "tools/double.ts", "args": {"n": 21}}`))
			ch <- reply{out, err}
		}()
		return ch
	}
	waiting := func() approval.Request {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			rs, _ := rt.Approvals(approval.StatePending)
			if len(rs) == 1 && rs[0].Waiting > 0 {
				return rs[0]
			}
		}
		t.Fatal("no run waits for its approval")
		return approval.Request{}
	}
	ch := run()
	r := waiting()
	if _, err := rt.Approve("tools/double.ts", host.ApproveOptions{Reason: "looked at it"}); err != nil {
		t.Fatal(err)
	}
	got := <-ch
	var res kerneltools.ExecResult
	if got.err != nil || json.Unmarshal(got.out, &res) != nil || !res.Success || string(res.Result.Result) != "42" || res.Hash != r.Hash {
		t.Fatalf("the approved run: %s %v", got.out, got.err)
	}
	all, _ := rt.Approvals("")
	if len(all) != 1 || all[0].DecidedBy != "go-api" || all[0].Reason != "looked at it" {
		t.Errorf("recorded decision %+v", all)
	}
	if s := search(); !strings.Contains(s, "tools/double.ts") {
		t.Errorf("search_tools does not offer the approved tool: %s", s)
	}

	// A patched tool is a new version: its run waits again; Deny ends it.
	patch, _ := json.Marshal(map[string]string{"path": "tools/double.ts", "search": "* 2", "replace": "* 3"})
	if _, err := rt.Call(ctx, "patch_file", patch); err != nil {
		t.Fatal(err)
	}
	ch = run()
	r2 := waiting()
	if r2.ID == r.ID {
		t.Fatal("the patched version reuses the old approval")
	}
	if _, err := rt.Deny(r2.ID, host.ApproveOptions{By: "reviewer", Reason: "triples"}); err != nil {
		t.Fatal(err)
	}
	got = <-ch
	res = kerneltools.ExecResult{}
	if got.err != nil || json.Unmarshal(got.out, &res) != nil || res.Success || res.Error == nil ||
		string(res.Error.Kind) != approval.CodeDenied || !strings.Contains(res.Error.Message, "triples") || !strings.Contains(res.Error.Message, "reviewer") {
		t.Fatalf("the denied run: %s %v", got.out, got.err)
	}
}

// governance.approval.off: nothing waits, nothing is recorded.
func TestApprovalOff(t *testing.T) {
	cfg := host.Config{Root: t.TempDir(), Isolation: "inprocess"}
	cfg.Governance.Approval.Off = true
	rt := start(t, cfg)
	args, _ := json.Marshal(map[string]string{"path": "tools/double.ts", "content": riskyDouble})
	if _, err := rt.Call(context.Background(), "write_file", args); err != nil {
		t.Fatal(err)
	}
	out, err := rt.Call(context.Background(), "exec_tool", json.RawMessage(`{"path": "tools/double.ts", "args": {"n": 2}}`))
	if err != nil || !strings.Contains(string(out), `"result":4`) {
		t.Fatalf("with the gate off: %s %v", out, err)
	}
	if _, err := rt.Approve("tools/double.ts", host.ApproveOptions{}); err == nil || !strings.Contains(err.Error(), "governance.approval.off") {
		t.Errorf("Approve with the gate off: %v", err)
	}
}

// Approving by path names one reviewed version: with two versions
// pending, the path is refused (listing both), path@<hash> picks one,
// and the decision returns the hash it approved.
func TestApproveByPathPicksOneVersion(t *testing.T) {
	cfg := host.Config{Root: t.TempDir(), Isolation: "inprocess"}
	cfg.Governance.Approval.Timeout = host.Duration(time.Millisecond)
	rt := start(t, cfg)
	ctx := context.Background()
	write := func(src string) kerneltools.WriteResult {
		args, _ := json.Marshal(map[string]string{"path": "tools/double.ts", "content": src})
		out, err := rt.Call(ctx, "write_file", args)
		var w kerneltools.WriteResult
		if err != nil || json.Unmarshal(out, &w) != nil || w.Approval == nil {
			t.Fatalf("write_file: %s %v", out, err)
		}
		return w
	}
	w1 := write(riskyDouble)
	w2 := write(strings.Replace(riskyDouble, "* 2", "* 3", 1))
	_, err := rt.Approve("tools/double.ts", host.ApproveOptions{})
	if !errors.Is(err, approval.ErrAmbiguous) || !strings.Contains(err.Error(), w1.Approval.ID) || !strings.Contains(err.Error(), w2.Approval.ID) {
		t.Fatalf("approving a path with two versions pending: %v", err)
	}
	r, err := rt.Approve("tools/double.ts@"+w1.Hash[:12], host.ApproveOptions{})
	if err != nil || r.ID != w1.Approval.ID || r.Hash != w1.Hash || r.State != approval.StateApproved {
		t.Fatalf("approving tools/double.ts@%.12s: %+v %v", w1.Hash, r, err)
	}
	// The file holds the second version, still pending: it does not run.
	out, err := rt.Call(ctx, "exec_tool", json.RawMessage(`{"path": "tools/double.ts", "args": {"n": 1}}`))
	if err != nil || !strings.Contains(string(out), approval.CodeTimeout) {
		t.Fatalf("the unapproved version: %s %v", out, err)
	}
}
