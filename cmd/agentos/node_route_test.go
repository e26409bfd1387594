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

	"github.com/agentos-run/agentos/internal/testutil"
)

// spinTool asks the tool tree, again and again, until tools/go.txt exists:
// a run that lasts until the test lets it end.
const spinTool = `/** Waits for tools/go.txt. */
export default async function (): Promise<string> {
  for (;;) {
    const files: string[] = await tgp.list_files("tools");
    if (files.includes("tools/go.txt")) return "went";
  }
}
`

const throwTool = `/** Always fails. */
export default async function (): Promise<number> {
  throw new Error("bad input");
}
`

// cliChild starts the agentos command as a real child process (this test
// binary in command mode).
func cliChild(t *testing.T, args ...string) (*exec.Cmd, *lockedBuffer, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "AGENTOS_CLI_CHILD=1")
	out, errb := &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, out, errb
}

// runRow is a row of 'agentos runs --json'.
type runRow struct {
	ID          string `json:"id"`
	Tool        string `json:"tool"`
	Status      string `json:"status"`
	Calls       int    `json:"calls"`
	Interrupted string `json:"interrupted"`
	Resume      string `json:"resume"`
	Limits      *struct {
		Timeout time.Duration `json:"timeout_ns"`
	} `json:"limits"`
	PID int `json:"host_pid"`
}

func listRuns(t *testing.T, root string) []runRow {
	t.Helper()
	code, stdout, stderr := cli(t, "runs", "--root", root, "--json")
	var out struct {
		Runs []runRow `json:"runs"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || code != 0 {
		t.Fatalf("runs --json: %d %v %q %q", code, err, stdout, stderr)
	}
	return out.Runs
}

// Issue 11, item 1: while 'agentos serve' runs in a root, exec, runs,
// trace, replay and recover go through the node (which holds the journal)
// instead of failing on the journal's lock, and show the node's data. Each
// subtest failed before the fix.
func TestJournalCommandsThroughServingNode(t *testing.T) {
	root := toolRoot(t, map[string]string{
		"tools/total.ts": totalTool, "orders.csv": "id,amount\n1,40\n2,60\n",
		"tools/throw.ts": throwTool, "tools/spin.ts": spinTool,
	})
	// A run recorded before the node starts.
	code, stdout, stderr := cli(t, "exec", "--root", root, "--json", "tools/total.ts", `{"file": "orders.csv"}`)
	var res struct {
		Success bool            `json:"success"`
		Result  json.RawMessage `json:"result"`
		Error   *struct{ Message string }
		Run     string `json:"run"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != 0 || res.Run == "" {
		t.Fatalf("exec: %d %v %q %q", code, err, stdout, stderr)
	}
	id := res.Run
	cmd, out := startServe(t, root, t.TempDir(), fmt.Sprint(time.Now().UnixNano()))
	var execID, failedID, traced, spinID string

	t.Run("exec", func(t *testing.T) {
		// The node runs the tool: same JSON, same exit status, a run id.
		code, stdout, stderr := cli(t, "exec", "--root", root, "--json", "tools/total.ts", `{"file": "orders.csv"}`)
		res.Success, res.Run = false, ""
		if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != 0 || !res.Success || string(res.Result) != "102" || res.Run == "" {
			t.Fatalf("exec with a node serving: %d %v %q %q\n%s", code, err, stdout, stderr, out.String())
		}
		execID = res.Run
		code, stdout, stderr = cli(t, "exec", "--root", root, "--json", "tools/throw.ts")
		res.Success, res.Run, res.Error = true, "", nil
		if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != 1 || res.Success || res.Error == nil || !strings.Contains(res.Error.Message, "bad input") || res.Run == "" {
			t.Fatalf("a failing exec with a node serving: %d %v %q %q", code, err, stdout, stderr)
		}
		failedID = res.Run
		code, stdout, stderr = cli(t, "exec", "--root", root, "tools/total.ts", `{"file": "orders.csv"}`)
		if code != 0 || strings.TrimSpace(stdout) != "102" || !strings.Contains(stderr, "recorded") {
			t.Fatalf("exec (text) with a node serving: %d %q %q", code, stdout, stderr)
		}
		// --no-journal is unaffected: it runs here, unrecorded.
		if code, stdout, stderr = cli(t, "exec", "--root", root, "--no-journal", "tools/total.ts", `{"file": "orders.csv"}`); code != 0 || strings.TrimSpace(stdout) != "102" || strings.Contains(stderr, "recorded") {
			t.Fatalf("exec --no-journal with a node serving: %d %q %q", code, stdout, stderr)
		}
	})

	t.Run("runs", func(t *testing.T) {
		rows := listRuns(t, root)
		if len(rows) == 0 || rows[0].ID != id || rows[0].Status != "ok" || rows[0].Calls != 1 {
			t.Fatalf("runs with a node serving: %+v", rows)
		}
		if code, stdout, _ := cli(t, "runs", "--root", root); code != 0 || !strings.Contains(stdout, id) || !strings.Contains(stdout, " ok ") {
			t.Fatalf("runs (text) with a node serving: %d %q", code, stdout)
		}
	})

	t.Run("trace", func(t *testing.T) {
		code, stdout, stderr := cli(t, "trace", "--root", root, id)
		if code != 0 || !strings.Contains(stdout, `fs.read_file`) || !strings.Contains(stdout, `{"path":"orders.csv"}`) || !strings.Contains(stdout, "result 102") {
			t.Fatalf("trace with a node serving: %d %q %q", code, stdout, stderr)
		}
		code, traced, stderr = cli(t, "trace", "--root", root, "--json", id)
		var d struct {
			Run     struct{ ID string }
			Source  string
			Entries []struct{ Seq uint64 }
		}
		if err := json.Unmarshal([]byte(traced), &d); err != nil || code != 0 || d.Run.ID != id || d.Source != totalTool || len(d.Entries) != 1 {
			t.Fatalf("trace --json with a node serving: %d %v %q %q", code, err, traced, stderr)
		}
		if code, _, stderr = cli(t, "trace", "--root", root, "nope"); code != 2 || !strings.Contains(stderr, `no such run in the journal: "nope"`) {
			t.Fatalf("trace of an unknown run with a node serving: %d %q", code, stderr)
		}
	})

	t.Run("replay", func(t *testing.T) {
		// Offline, in this process, of the node's run.
		if code, stdout, stderr := cli(t, "replay", "--root", root, id); code != 0 || !strings.Contains(stdout, "same result as recorded") {
			t.Fatalf("replay with a node serving: %d %q %q", code, stdout, stderr)
		}
	})

	t.Run("recover", func(t *testing.T) {
		if code, stdout, stderr := cli(t, "recover", "--root", root); code != 0 || !strings.Contains(stdout, "no unfinished runs (the serving node") {
			t.Fatalf("recover with a node serving: %d %q %q", code, stdout, stderr)
		}
		// A run interrupted while the node serves (its exec was killed) is
		// resumed by the node.
		child, _, childErr := cliChild(t, "exec", "--root", root, "--timeout", "60s", "tools/spin.ts")
		testutil.Eventually(t, 60*time.Second, "the spinning run to start", func() bool {
			for _, r := range listRuns(t, root) {
				if r.Tool == "tools/spin.ts" {
					spinID = r.ID
					return true
				}
			}
			return false
		})
		if err := child.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = child.Wait()
		testutil.Eventually(t, 60*time.Second, "the node to interrupt the run its caller left", func() bool {
			for _, r := range listRuns(t, root) {
				if r.ID == spinID {
					return r.Status == "interrupted" && r.Interrupted != "" // its host stopped it: shown interrupted (item 6)
				}
			}
			return false
		})
		if err := os.WriteFile(filepath.Join(root, "tools", "go.txt"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := cli(t, "recover", "--root", root)
		if code != 0 || !strings.Contains(stdout, "resumed run "+spinID+" (tools/spin.ts): ok") {
			t.Fatalf("recover with a node serving: %d %q %q (child: %q)", code, stdout, stderr, childErr.String())
		}
		for _, r := range listRuns(t, root) {
			if r.ID == spinID && r.Status != "ok" {
				t.Fatalf("the resumed run is %s, want ok", r.Status)
			}
		}
		if code, stdout, _ = cli(t, "recover", "--root", root, "--json"); code != 0 || !strings.Contains(stdout, `"recovered": []`) {
			t.Fatalf("recover --json with nothing left: %d %q", code, stdout)
		}
	})

	// The node's journal holds it all: once it stops, the same runs and trace.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, out.String())
	}
	if t.Failed() {
		return
	}
	if code, stdout, _ := cli(t, "trace", "--root", root, "--json", id); code != 0 || stdout != traced {
		t.Fatalf("trace without the node differs:\n%s\nthrough the node:\n%s", stdout, traced)
	}
	byID := map[string]runRow{}
	for _, r := range listRuns(t, root) {
		byID[r.ID] = r
	}
	if len(byID) != 5 || byID[execID].Status != "ok" || byID[failedID].Status != "failed" || byID[spinID].Status != "ok" {
		t.Fatalf("the journal after the node stopped: %+v", byID)
	}
}

// Issue 11, item 1: two 'agentos exec' in one tool root, with no node
// serving, overlap; the second waits for the journal (saying so) and both
// succeed, both recorded.
func TestConcurrentExecOneRoot(t *testing.T) {
	root := toolRoot(t, map[string]string{"tools/spin.ts": spinTool, "tools/total.ts": totalTool, "orders.csv": "id,amount\n1,40\n2,60\n"})
	a, aOut, aErr := cliChild(t, "exec", "--root", root, "--timeout", "60s", "tools/spin.ts")
	// The first holds the journal once its run is recorded as started.
	testutil.Eventually(t, 60*time.Second, "the first run to start", func() bool {
		code, stdout, _ := cli(t, "runs", "--root", root, "--json")
		return code == 1 && !strings.Contains(stdout, "[") // the journal is held: runs cannot open it
	})
	b, bOut, bErr := cliChild(t, "exec", "--root", root, "tools/total.ts", `{"file": "orders.csv"}`)
	testutil.Eventually(t, 60*time.Second, "the second exec to say it waits", func() bool { return strings.Contains(bErr.String(), "waiting up to") })
	if err := os.WriteFile(filepath.Join(root, "tools", "go.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.Wait(); err != nil || strings.TrimSpace(aOut.String()) != `"went"` {
		t.Fatalf("first exec: %v %q %q", err, aOut.String(), aErr.String())
	}
	if err := b.Wait(); err != nil || strings.TrimSpace(bOut.String()) != "102" {
		t.Fatalf("second exec: %v %q %q", err, bOut.String(), bErr.String())
	}
	rows := listRuns(t, root)
	if len(rows) != 2 || rows[0].Status != "ok" || rows[1].Status != "ok" {
		t.Fatalf("runs after two concurrent execs: %+v", rows)
	}
}
