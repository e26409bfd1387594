package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	if code != 0 || strings.Join(strings.Fields(stdout), "") != `{"recovered":[]}` {
		t.Fatalf("recover --json: %d %q", code, stdout)
	}
	if code, _, _ := cli(t, "recover", "--root", root, "extra"); code != 2 {
		t.Fatal("recover with an argument must be a usage error")
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
