package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/journal"
)

// The crash itself is tested in the root package (TestCrashAndRecover); here
// the command's output and exit status.
func TestRecover(t *testing.T) {
	root, _ := recorded(t)
	code, stdout, _ := cli(t, "recover", "--root", root)
	if code != 0 || !strings.Contains(stdout, "no unfinished runs") {
		t.Fatalf("recover: %d %q", code, stdout)
	}
	code, stdout, _ = cli(t, "recover", "--root", root, "--json")
	if code != 0 || strings.Join(strings.Fields(stdout), "") != `{"recovered":[],"forges":[],"left":[]}` {
		t.Fatalf("recover --json: %d %q", code, stdout)
	}
	if code, _, _ := cli(t, "recover", "--root", root, "extra"); code != 2 {
		t.Fatal("recover with an argument must be a usage error")
	}
	// Issue 25 item 12: an unknown id exits 2, as in trace, replay and
	// persona show.
	if code, _, stderr := cli(t, "recover", "--root", root, "--run", "nope"); code != 2 || !strings.Contains(stderr, `no such run in the journal: "nope"`) {
		t.Fatalf("recover --run of an unknown id: %d %q", code, stderr)
	}
}

// Issue 10, item 6, through the CLI: 'agentos exec --inprocess' is killed
// while its tool runs (the tool would then parse a JSON bomb). 'agentos
// recover' (in-process configuration) must not run it in this process: it
// quarantines it, with the reason. 'agentos recover --run ID' resumes it in a
// worker process, to a classified failure.
func TestRecoverQuarantinedRun(t *testing.T) {
	const poison = `/** Waits for tools/go.txt, then parses a JSON bomb. */
export default async function (): Promise<number> {
  await tgp.write_file('/tmp/started', 'yes');
  while (!(await tgp.list_files('tools')).includes('tools/go.txt')) {}
  return JSON.parse('['.repeat(5e6) + ']'.repeat(5e6)).length;
}
`
	root := toolRoot(t, map[string]string{"tools/poison.ts": poison})
	cfgPath := filepath.Join(root, "agentos.json")
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, bytes.Replace(b, []byte(`"isolation": "process"`), []byte(`"isolation": "inprocess"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	killedExec(t, root, "--inprocess", "tools/poison.ts") // SIGKILLed while its run is under way
	if err := os.WriteFile(filepath.Join(root, "tools", "go.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := cli(t, "recover", "--root", root, "--json")
	var recOut struct {
		Recovered []struct {
			Run         struct{ ID, Status string }
			Resumed     bool
			Quarantined bool
			Reason      string
		}
	}
	err = json.Unmarshal([]byte(stdout), &recOut)
	reports := recOut.Recovered
	if code != 0 || err != nil || len(reports) != 1 || !reports[0].Quarantined || reports[0].Resumed ||
		!strings.Contains(reports[0].Reason, "died while the run was executing in-process") {
		t.Fatalf("recover: %d %q %q (%v)", code, stdout, stderr, err)
	}
	id := reports[0].Run.ID
	if code, stdout, _ := cli(t, "runs", "--root", root); code != 0 || !strings.Contains(stdout, "quarantined") {
		t.Fatalf("runs: %d %q", code, stdout)
	}
	code, stdout, _ = cli(t, "recover", "--root", root)
	if code != 0 || !strings.Contains(stdout, "run "+id+" (tools/poison.ts) quarantined: ") || !strings.Contains(stdout, "agentos recover --run "+id) {
		t.Fatalf("recover again: %d %q", code, stdout)
	}
	// The resumed run fails: recover says so and exits 1 (issue 11, item
	// 5: it never exits 0 for a run whose resumed execution failed).
	code, stdout, stderr = cli(t, "recover", "--root", root, "--run", id)
	if code != 1 || !strings.Contains(stdout, "resumed run "+id+" (tools/poison.ts): failed: exception: RangeError: JSON.parse") {
		t.Fatalf("recover --run: %d %q %q", code, stdout, stderr)
	}
	if code, stdout, _ := cli(t, "recover", "--root", root); code != 0 || !strings.Contains(stdout, "no unfinished runs") {
		t.Fatalf("after the resume: %d %q", code, stdout)
	}
	if code, _, stderr := cli(t, "recover", "--root", root, "--run", "nope"); code == 0 || !strings.Contains(stderr, "nope") {
		t.Fatalf("recover --run nope: %d %q", code, stderr)
	}
}

// interruptedRun records in root's journal a run of kind, with args, that
// its host stopped (as a killed forge or agent leaves it), and returns its
// id.
func interruptedRun(t *testing.T, root, kind string, args any) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, host.StateDir), 0o700); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(filepath.Join(root, host.JournalFile), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	a, _ := json.Marshal(args)
	run, err := j.Begin(journal.RunMeta{Kind: kind, Args: a})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Interrupt("killed"); err != nil {
		t.Fatal(err)
	}
	return run.ID()
}

// Issue 25 item 10: 'agentos recover' printed "no unfinished runs" while
// 'agentos runs' listed an interrupted forge. It lists and resumes every
// kind of run 'runs' calls interrupted: the forge is resumed with the
// configured model (stderr says so first), an agent's run is listed with
// what resumes it.
func TestRecoverResumesForges(t *testing.T) {
	args, _ := json.Marshal(map[string]string{"path": "tools/math/fib.ts", "code": samples.FibForged, "tests": samples.FibForgedTests})
	srv := llmtest.NewServer([]llmtest.Step{{ToolCalls: []llm.ToolCall{{ID: "1", Name: "submit_tool", Arguments: string(args)}}}})
	defer srv.Close()
	t.Setenv("AGENTOS_LLM_BASE_URL", srv.URL())
	t.Setenv("AGENTOS_LLM_MODEL", "scripted")
	root := toolRoot(t, nil)
	forgeID := interruptedRun(t, root, "forge", map[string]string{"spec": "a tool that returns the n-th Fibonacci number"})
	agentID := interruptedRun(t, root, "agent", map[string]string{"task": "t"})

	code, stdout, _ := cli(t, "runs", "--root", root, "--json")
	if code != 0 || !strings.Contains(stdout, `"resume": "agentos recover --run `+forgeID+`"`) {
		t.Fatalf("runs: %d %s", code, stdout)
	}
	code, stdout, stderr := cli(t, "recover", "--root", root, "--json")
	var out struct {
		Recovered []json.RawMessage
		Forges    []host.ForgeReport
		Left      []host.LeftRun
	}
	if err := json.Unmarshal([]byte(stdout), &out); code != 0 || err != nil {
		t.Fatalf("recover --json: %d %v\n%s\n%s", code, err, stdout, stderr)
	}
	if len(out.Forges) != 1 || out.Forges[0].Run != forgeID || out.Forges[0].Err != "" || out.Forges[0].Result.Path != "tools/math/fib.ts" {
		t.Fatalf("recover resumed forges %+v, want %s forged", out.Forges, forgeID)
	}
	if len(out.Left) != 1 || out.Left[0].Run.ID != agentID || !strings.Contains(out.Left[0].Reason, "agentos restore") {
		t.Fatalf("recover left %+v, want the agent run %s with what resumes it", out.Left, agentID)
	}
	if !strings.Contains(stderr, "resuming the interrupted forges") || srv.Requests() != 1 {
		t.Fatalf("recover's stderr %q, model requests %d", stderr, srv.Requests())
	}
	if _, err := os.Stat(filepath.Join(root, "tools", "math", "fib.ts")); err != nil {
		t.Fatal("the resumed forge wrote no tool:", err)
	}
	// The forge ended: recover has nothing more to resume.
	code, stdout, _ = cli(t, "recover", "--root", root)
	if code != 0 || strings.Contains(stdout, forgeID) || !strings.Contains(stdout, "run "+agentID+" (agent) interrupted, left as it is") {
		t.Fatalf("recover again: %d %q", code, stdout)
	}
	if code, _, stderr := cli(t, "recover", "--root", root, "--run", forgeID); code != 1 || !strings.Contains(stderr, "not interrupted") {
		t.Fatalf("recover --run of an ended forge: %d %q", code, stderr)
	}
}
