package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slowTool waits for tools/go.txt (a run the test can kill while it
// waits), then throws when asked to, or counts to n: far longer than the
// tool root's 10 ms default timeout, far shorter than the run's own.
const slowTool = `/** Waits for tools/go.txt, then counts to n (or throws when asked). */
export default async function (a: { n: number; fail?: boolean }): Promise<number> {
  await tgp.write_file('/tmp/started', 'yes');
  while (!(await tgp.list_files('tools')).includes('tools/go.txt')) {}
  if (a.fail) throw new Error('failed after the resume');
  let x = 0;
  for (let i = 0; i < a.n; i++) x = (x + i) % 1000003;
  return x;
}
`

// countTool counts to n at once, then asks the tool tree once: recorded
// I/O that a replay stopped early never reaches.
const countTool = `/** Counts to n, then lists the tools. */
export default async function (a: { n: number }): Promise<number> {
  let x = 0;
  for (let i = 0; i < a.n; i++) x = (x + i) % 1000003;
  const files: string[] = await tgp.list_files('tools');
  return x + files.length;
}
`

// tinyTimeoutRoot is a tool root whose default timeout is 10 ms.
func tinyTimeoutRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := toolRoot(t, files)
	p := filepath.Join(root, "agentos.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"timeout": "5s"`) {
		t.Fatalf("agentos.json has no 5s timeout to change:\n%s", b)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), `"timeout": "5s"`, `"timeout": "10ms"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// killedExec runs 'agentos exec' as a real child process (this test binary
// as the CLI), waits until its tool has started, and SIGKILLs it: the run
// is genuinely interrupted. It returns the run's id.
//
// The root is set to journal_sync_runs first: under the default group
// commit a run's start reaches the file within milliseconds of the tool
// starting, not before it, so a kill at once may lose the run whole, as
// docs/REPLAY.md says (a faster tool made that race show). These tests are
// about a run that was recorded, which journal_sync_runs guarantees.
func killedExec(t *testing.T, root string, args ...string) string {
	t.Helper()
	setConfig(t, root, "journal_sync_runs", true)
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], append([]string{"exec", "--root", root}, args...)...)
	cmd.Env = append(os.Environ(), "AGENTOS_CLI_CHILD=1", "TMPDIR="+tmp)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m, _ := filepath.Glob(filepath.Join(tmp, "agentos-run-*", "started")); len(m) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run never started:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for _, r := range listRuns(t, root) {
		if r.PID == cmd.Process.Pid {
			return r.ID
		}
	}
	t.Fatalf("no run of the killed exec (pid %d) in the journal", cmd.Process.Pid)
	return ""
}

func runRowByID(t *testing.T, root, id string) runRow {
	t.Helper()
	for _, r := range listRuns(t, root) {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no run %s", id)
	return runRow{}
}

// Issue 11, item 6: a SIGKILLed 'agentos exec' leaves its run "running" in
// the journal. 'agentos runs' (text and --json) and 'agentos trace' show it
// "interrupted", with the command that resumes it; once resumed and ended it
// is "ok".
func TestKilledRunShowsInterrupted(t *testing.T) {
	root := tinyTimeoutRoot(t, map[string]string{"tools/slow.ts": slowTool})
	id := killedExec(t, root, "--timeout", "60s", "tools/slow.ts", `{"n": 10}`)

	r := runRowByID(t, root, id)
	if r.Status != "interrupted" || r.Resume != "agentos recover --run "+id {
		t.Fatalf("runs --json shows the killed run as %+v, want interrupted with its resume command", r)
	}
	code, stdout, _ := cli(t, "runs", "--root", root)
	if code != 0 || !strings.Contains(stdout, " interrupted ") || strings.Contains(stdout, " running ") ||
		!strings.Contains(stdout, "resume it with 'agentos recover --run "+id+"'") {
		t.Fatalf("runs: %d %q", code, stdout)
	}
	if code, stdout, _ := cli(t, "trace", "--root", root, id); code != 0 || !strings.Contains(stdout, "interrupted") {
		t.Fatalf("trace: %d %q", code, stdout)
	}

	if err := os.WriteFile(filepath.Join(root, "tools", "go.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := cli(t, "recover", "--root", root, "--run", id); code != 0 {
		t.Fatalf("recover --run: %d %q %q", code, stdout, stderr)
	}
	if r := runRowByID(t, root, id); r.Status != "ok" || r.Resume != "" {
		t.Fatalf("after the resume: %+v", r)
	}
}

// Issue 11, item 5: a run started with 'exec --timeout 60s' and killed is
// resumed by 'agentos recover' under its own 60 s, not the tool root's
// default (10 ms here), and ends ok. '--timeout' overrides the recorded
// limit; a resumed run that then fails (here at the overridden limit, or
// by throwing) is reported as failed, with its error, and recover exits 1.
func TestRecoverKeepsTheRunsLimits(t *testing.T) {
	root := tinyTimeoutRoot(t, map[string]string{"tools/slow.ts": slowTool})
	id := killedExec(t, root, "--timeout", "60s", "tools/slow.ts", `{"n": 3000000}`)
	if r := runRowByID(t, root, id); r.Limits == nil || r.Limits.Timeout != 60*time.Second {
		t.Fatalf("the run's limits were not recorded: %+v", r.Limits)
	}
	if err := os.WriteFile(filepath.Join(root, "tools", "go.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := cli(t, "recover", "--root", root, "--json")
	var wrapped struct {
		Recovered []struct {
			Run     struct{ ID string }
			Outcome string
			Resumed bool
			Result  struct {
				Success bool
				Error   *struct{ Kind, Message string }
			}
			Limits struct {
				Timeout time.Duration `json:"timeout"`
			}
		} `json:"recovered"`
	}
	err := json.Unmarshal([]byte(stdout), &wrapped)
	reports := wrapped.Recovered
	if err != nil || code != 0 || len(reports) != 1 || reports[0].Run.ID != id ||
		!reports[0].Resumed || !reports[0].Result.Success || reports[0].Outcome != "resumed" || reports[0].Limits.Timeout != 60*time.Second {
		t.Fatalf("recover: %d %q %q (%v)", code, stdout, stderr, err)
	}
	if r := runRowByID(t, root, id); r.Status != "ok" {
		t.Fatalf("the resumed run is %s", r.Status)
	}

	// --timeout overrides the recorded limit: 1 ms is too short, and the
	// failure is reported as such, with exit status 1.
	if err := os.Remove(filepath.Join(root, "tools", "go.txt")); err != nil {
		t.Fatal(err)
	}
	id2 := killedExec(t, root, "--timeout", "60s", "tools/slow.ts", `{"n": 3000000}`)
	if err := os.WriteFile(filepath.Join(root, "tools", "go.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = cli(t, "recover", "--root", root, "--timeout", "1ms")
	if code != 1 || !strings.Contains(stdout, "resumed run "+id2+" (tools/slow.ts): failed: timeout: ") ||
		!strings.Contains(stdout, "limits: timeout overridden: 1ms (the run's: 1m0s)") {
		t.Fatalf("recover --timeout 1ms: %d %q %q", code, stdout, stderr)
	}
	if r := runRowByID(t, root, id2); r.Status != "failed" {
		t.Fatalf("the run failed at its limit but is %s", r.Status)
	}

	// A resumed run that throws: failed, exit 1.
	_ = os.Remove(filepath.Join(root, "tools", "go.txt"))
	id3 := killedExec(t, root, "--timeout", "60s", "tools/slow.ts", `{"n": 1, "fail": true}`)
	if err := os.WriteFile(filepath.Join(root, "tools", "go.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = cli(t, "recover", "--root", root, "--run", id3)
	if code != 1 || !strings.Contains(stdout, "resumed run "+id3+" (tools/slow.ts): failed: exception: Error: failed after the resume") {
		t.Fatalf("recover --run of a failing run: %d %q %q", code, stdout, stderr)
	}

	for _, bad := range []string{"0s", "-1s"} {
		if code, _, stderr := cli(t, "recover", "--root", root, "--timeout", bad); code != 2 || !strings.Contains(stderr, "give a positive duration") {
			t.Fatalf("recover --timeout %s: %d %q", bad, code, stderr)
		}
	}
}

// Issue 11, item 5, at a node's start: 'agentos serve' resumes a killed
// run under its recorded limit (it ends ok), and never says "resumed" of a
// run whose resumed execution failed.
func TestServeResumesUnderTheRunsLimits(t *testing.T) {
	root := tinyTimeoutRoot(t, map[string]string{"tools/slow.ts": slowTool})
	okID := killedExec(t, root, "--timeout", "60s", "tools/slow.ts", `{"n": 3000000}`)
	failID := killedExec(t, root, "--timeout", "60s", "tools/slow.ts", `{"n": 1, "fail": true}`)
	if err := os.WriteFile(filepath.Join(root, "tools", "go.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprint(time.Now().UnixNano())
	cmd, out := startServe(t, root, t.TempDir(), marker)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, out.String())
	}
	text := out.String()
	if !strings.Contains(text, "recovered run "+okID+" (tools/slow.ts): resumed\n") ||
		!strings.Contains(text, "recovered run "+failID+" (tools/slow.ts): resumed and failed: exception: Error: failed after the resume") {
		t.Fatalf("serve did not report what became of the runs:\n%s", text)
	}
	if r := runRowByID(t, root, okID); r.Status != "ok" {
		t.Fatalf("the run resumed at start is %s, want ok (resumed under its own 60s)", r.Status)
	}
}

// Issue 11, item 5, replay: a run recorded with 'exec --timeout 120s' whose
// work outlasts the tool root's default timeout replays under its own limit
// and gives the same result. A replay stopped by a limit (here --timeout
// 1ms) is reported as a timeout, with the limit, never as a divergence.
func TestReplayKeepsTheRunsLimits(t *testing.T) {
	root := tinyTimeoutRoot(t, map[string]string{"tools/count.ts": countTool})
	code, stdout, stderr := cli(t, "exec", "--root", root, "--json", "--timeout", "120s", "tools/count.ts", `{"n": 3000000}`)
	var res struct {
		Success bool
		Run     string
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != 0 || !res.Success {
		t.Fatalf("exec: %d %q %q", code, stdout, stderr)
	}
	code, stdout, stderr = cli(t, "replay", "--root", root, res.Run)
	if code != 0 || !strings.Contains(stdout, "same result as recorded") || strings.Contains(stdout, "DIVERGED") {
		t.Fatalf("replay: %d %q %q", code, stdout, stderr)
	}

	code, stdout, stderr = cli(t, "replay", "--root", root, "--timeout", "1ms", res.Run)
	if code != 1 || strings.Contains(stdout, "DIVERGED") || !strings.Contains(stdout, "LIMIT the replay stopped at its limit (timeout 1ms)") ||
		!strings.Contains(stdout, "recorded under a timeout of 2m0s") || !strings.Contains(stdout, "timeout overridden: 1ms (the run's: 2m0s)") {
		t.Fatalf("replay --timeout 1ms: %d %q %q", code, stdout, stderr)
	}
	code, stdout, _ = cli(t, "replay", "--root", root, "--json", "--timeout", "1ms", res.Run)
	var rep struct {
		LimitHit   string          `json:"limit_hit"`
		Divergence json.RawMessage `json:"divergence"`
		Limits     struct {
			Timeout time.Duration `json:"timeout"`
		} `json:"limits"`
		Result struct{ Error *struct{ Kind string } }
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != 1 || rep.LimitHit != "timeout 1ms" || rep.Divergence != nil ||
		rep.Limits.Timeout != time.Millisecond || rep.Result.Error == nil || rep.Result.Error.Kind != "timeout" {
		t.Fatalf("replay --json --timeout 1ms: %d %q (%v)", code, stdout, err)
	}
	if code, _, stderr := cli(t, "replay", "--root", root, "--timeout", "0s", res.Run); code != 2 || !strings.Contains(stderr, "give a positive duration") {
		t.Fatalf("replay --timeout 0s: %d %q", code, stderr)
	}
}
