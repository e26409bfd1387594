package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentos-run/agentos/governance/approval"
)

// riskyTool is valid and runs, but check_tool rates it high risk.
const riskyTool = `/** Doubles a number. @ignore-security */
export default function double(args: { n: number }): number {
  return args.n * 2;
}
`

// child runs this test binary as the agentos command in a process of its
// own and returns it started, its combined output collected.
func child(t *testing.T, tmp string, args ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "AGENTOS_CLI_CHILD=1", "TMPDIR="+tmp)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	return cmd, out
}

// exitOf waits for cmd (at most a minute) and returns its exit code.
func exitOf(t *testing.T, cmd *exec.Cmd, out *lockedBuffer) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%v did not end:\n%s", cmd.Args, out.String())
	}
	return cmd.ProcessState.ExitCode()
}

// pendingOf waits until root has a pending approval request for path and
// returns it (asked through the CLI, as a user would).
func pendingOf(t *testing.T, root, path string) approval.Request {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, stdout, stderr := cli(t, "approvals", "--root", root, "--json")
		if code != 0 {
			t.Fatalf("approvals: %d %s", code, stderr)
		}
		var got struct{ Approvals []approval.Request }
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("approvals --json: %v: %s", err, stdout)
		}
		for _, r := range got.Approvals {
			if r.Path == path && r.State == approval.StatePending {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pending approval of %s: %s", path, stdout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func writeTool(t *testing.T, root, src string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, "tools", "risky.ts"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Issue 16: a high-risk tool waits for an approval given from the CLI in
// another process, then completes; a changed version needs a new approval,
// and a denied one ends with approval_denied and the reason; a node
// restarted while a run waits keeps the pending request, and its approval
// lets the next run go at once.
func TestApproveAcrossProcesses(t *testing.T) {
	tmp := t.TempDir()
	root := toolRoot(t, map[string]string{"tools/risky.ts": riskyTool})
	serve, serveOut := startServe(t, root, tmp, "approve-"+filepath.Base(tmp))
	call := func() (*exec.Cmd, *lockedBuffer) {
		return child(t, tmp, "call", "--root", root, "--json", "exec_tool", `{"path": "tools/risky.ts", "args": {"n": 21}}`)
	}

	// 1. The run waits; 'agentos approve TOOL' in another process lets it go.
	c, out := call()
	req := pendingOf(t, root, "tools/risky.ts")
	if req.Risk != "high" || req.Waiting != 1 || len(req.Hash) != 64 {
		t.Errorf("pending request %+v, want risk high, one run waiting, the tool's hash", req)
	}
	a, aout := child(t, tmp, "approve", "--root", root, "tools/risky.ts", "--reason", "reviewed")
	if code := exitOf(t, a, aout); code != 0 || !strings.Contains(aout.String(), "approved "+req.ID) {
		t.Fatalf("approve: %d %s", code, aout.String())
	}
	if code := exitOf(t, c, out); code != 0 || !strings.Contains(out.String(), `"result": 42`) {
		t.Fatalf("the approved run: %d %s", code, out.String())
	}
	code, stdout, _ := cli(t, "approvals", "--root", root, "--all", "--json")
	var all struct{ Approvals []approval.Request }
	_ = json.Unmarshal([]byte(stdout), &all)
	if code != 0 || len(all.Approvals) != 1 || all.Approvals[0].State != approval.StateApproved ||
		!strings.HasPrefix(all.Approvals[0].DecidedBy, "cli") || all.Approvals[0].Reason != "reviewed" {
		t.Errorf("after approval: %d %s", code, stdout)
	}

	// 2. A changed tool is a new version: it waits again; denied by id, the
	// run ends with approval_denied and the reason.
	writeTool(t, root, strings.Replace(riskyTool, "* 2", "* 3", 1))
	c, out = call()
	req2 := pendingOf(t, root, "tools/risky.ts")
	if req2.ID == req.ID || req2.Hash == req.Hash {
		t.Fatalf("the changed tool reuses the old approval: %+v", req2)
	}
	a, aout = child(t, tmp, "approve", "--root", root, "--deny", "--reason", "triples instead of doubling", req2.ID)
	if code := exitOf(t, a, aout); code != 0 {
		t.Fatalf("approve --deny: %d %s", code, aout.String())
	}
	if code := exitOf(t, c, out); code != 1 || !strings.Contains(out.String(), approval.CodeDenied) || !strings.Contains(out.String(), "triples instead of doubling") {
		t.Fatalf("the denied run: %d %s", code, out.String())
	}

	// 3. A node stopped while a run waits: the request stays pending, the
	// next node lists it, and its approval lets the next run go at once.
	writeTool(t, root, strings.Replace(riskyTool, "* 2", "* 4", 1))
	c, out = call()
	req3 := pendingOf(t, root, "tools/risky.ts")
	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitOf(t, serve, serveOut); code != 0 {
		t.Fatalf("serve after SIGTERM: %d %s", code, serveOut.String())
	}
	if code := exitOf(t, c, out); code == 0 || !strings.Contains(out.String(), "stays pending") {
		t.Errorf("the run waiting when the node stopped: %d %s", code, out.String())
	}
	startServe(t, root, tmp, "approve2-"+filepath.Base(tmp))
	if again := pendingOf(t, root, "tools/risky.ts"); again.ID != req3.ID || again.Hash != req3.Hash {
		t.Fatalf("after the restart the pending request is %+v, want %+v", again, req3)
	}
	if code, stdout, stderr := cli(t, "approve", "--root", root, req3.ID); code != 0 || !strings.Contains(stdout, "approved") {
		t.Fatalf("approve after the restart: %d %s %s", code, stdout, stderr)
	}
	c, out = call()
	if code := exitOf(t, c, out); code != 0 || !strings.Contains(out.String(), `"result": 84`) {
		t.Fatalf("the run after the restart's approval: %d %s", code, out.String())
	}
}

// With no node serving the root: a run times out with approval_timeout and
// says how to approve; 'agentos approve' writes the approvals file itself,
// and the next run goes.
func TestApproveTimeoutAndOffline(t *testing.T) {
	root := toolRoot(t, map[string]string{"tools/risky.ts": riskyTool})
	cfgPath := filepath.Join(root, "agentos.json")
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["governance"] = map[string]any{"approval": map[string]any{"timeout": "1s"}}
	b, _ = json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	args := `{"path": "tools/risky.ts", "args": {"n": 5}}`
	code, stdout, stderr := cli(t, "call", "--root", root, "--json", "exec_tool", args)
	if code != 1 || !strings.Contains(stdout, approval.CodeTimeout) || !strings.Contains(stdout, "agentos approve") {
		t.Fatalf("the run nobody approved: %d %s %s", code, stdout, stderr)
	}
	code, stdout, _ = cli(t, "approvals", "--root", root)
	if code != 0 || !strings.Contains(stdout, "tools/risky.ts") || !strings.Contains(stdout, "pending") {
		t.Fatalf("approvals after the timeout: %d %s", code, stdout)
	}
	if code, stdout, stderr = cli(t, "approve", "--root", root, "--json", "tools/risky.ts"); code != 0 {
		t.Fatalf("approve with no node: %d %s %s", code, stdout, stderr)
	}
	var r approval.Request
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || r.State != approval.StateApproved {
		t.Fatalf("approve --json: %v %s", err, stdout)
	}
	if code, stdout, stderr = cli(t, "call", "--root", root, "--json", "exec_tool", args); code != 0 || !strings.Contains(stdout, `"result": 10`) {
		t.Fatalf("the approved run: %d %s %s", code, stdout, stderr)
	}
	if code, _, stderr = cli(t, "approve", "--root", root, "tools/none.ts"); code == 0 || !strings.Contains(stderr, "agentos approvals") {
		t.Errorf("approving a tool that is not there: %d %s", code, stderr)
	}
}

// A root made by 'agentos init --no-git' has no state directory yet: an
// approval given with no node running creates it for the approvals file.
func TestApproveOfflineCreatesTheStateDirectory(t *testing.T) {
	root := t.TempDir()
	if code, stdout, stderr := cli(t, "init", "--no-git", root); code != 0 {
		t.Fatalf("init: %d %s %s", code, stdout, stderr)
	}
	if err := os.WriteFile(filepath.Join(root, "tools", "risky.ts"), []byte(riskyTool), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := cli(t, "approve", "--root", root, "tools/risky.ts")
	if code != 0 || !strings.Contains(stdout, "approved") {
		t.Fatalf("approve in a fresh root: %d %s %s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(root, ".agentos", "approvals.db")); err != nil {
		t.Fatalf("the approvals file: %v", err)
	}
}
