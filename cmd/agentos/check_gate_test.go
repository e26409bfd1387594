package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/governance/gate"
)

const gateSumV1 = `/** Sums the numbers of a file, one a line. */
export default async function (args: { file: string }): Promise<number> {
  const text: string = await tgp.read_file(args.file);
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  let total = 0;
  for (let i = 1; i < lines.length; i++) {
    total += Number(lines[i]);
  }
  return total;
}
`

// check --against-runs replays the previous version's recorded runs
// against the file as it is now, offline (the data files are gone), and
// fails when a run changed; --against-runs N bounds the runs; --json adds
// the report as "gate".
func TestCheckAgainstRuns(t *testing.T) {
	root := toolRoot(t, map[string]string{
		"tools/stats/sum.ts": gateSumV1,
		"tools/data/a.txt":   "1\n2\n3\n",
		"tools/data/b.txt":   "0\n5\n",
	})
	// No journal yet: nothing to replay, the check passes.
	code, stdout, stderr := cli(t, "check", "--root", root, "--against-runs", "tools/stats/sum.ts")
	if code != 0 || !strings.Contains(stdout, "gate: no journal") {
		t.Fatalf("no journal: exit %d %q %q", code, stdout, stderr)
	}
	for _, f := range []string{"a", "b", "a"} {
		if code, _, stderr := cli(t, "exec", "--root", root, "tools/stats/sum.ts", `{"file":"tools/data/`+f+`.txt"}`); code != 0 {
			t.Fatalf("exec: %d %s", code, stderr)
		}
	}
	if err := os.RemoveAll(filepath.Join(root, "tools", "data")); err != nil {
		t.Fatal(err)
	}
	// The same version: no other version has runs.
	code, stdout, _ = cli(t, "check", "--root", root, "--against-runs", "tools/stats/sum.ts")
	if code != 0 || !strings.Contains(stdout, "no recorded run of another version") {
		t.Fatalf("unchanged tool: exit %d %q", code, stdout)
	}
	fixed := strings.Replace(gateSumV1, "let i = 1", "let i = 0", 1)
	if err := os.WriteFile(filepath.Join(root, "tools", "stats", "sum.ts"), []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = cli(t, "check", "--root", root, "--against-runs", "tools/stats/sum.ts")
	if code != 1 || strings.Count(stdout, "DIFFERENT") != 2 || strings.Count(stdout, "same  ") != 1 || !strings.Contains(stdout, "old 5\n      new 6") {
		t.Fatalf("fixed tool: exit %d %q %q", code, stdout, stderr)
	}
	code, stdout, _ = cli(t, "check", "--root", root, "--against-runs", "1", "tools/stats/sum.ts")
	if code != 1 || !strings.Contains(stdout, "replayed 1 recorded run(s)") {
		t.Fatalf("--against-runs 1: exit %d %q", code, stdout)
	}
	code, stdout, _ = cli(t, "check", "--root", root, "--json", "--against-runs=2", "tools/stats/sum.ts")
	var out struct {
		Valid bool         `json:"valid"`
		Gate  *gate.Report `json:"gate"`
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&out); err != nil || dec.More() {
		t.Fatalf("--json did not print exactly one object: %v %q", err, stdout)
	}
	if code != 1 || !out.Valid || out.Gate == nil || len(out.Gate.Runs) != 2 || out.Gate.Found != 3 || out.Gate.Different != 1 || out.Gate.Same != 1 {
		t.Fatalf("--json: exit %d %s", code, stdout)
	}
	// A version that reads another file diverges.
	other := strings.Replace(gateSumV1, "tgp.read_file(args.file)", `tgp.read_file("tools/data/c.txt")`, 1)
	if err := os.WriteFile(filepath.Join(root, "tools", "stats", "sum.ts"), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = cli(t, "check", "--root", root, "--against-runs", "tools/stats/sum.ts")
	if code != 1 || strings.Count(stdout, "DIVERGENCE") != 3 || !strings.Contains(stdout, "[AGENTOS-J001] at call #") {
		t.Fatalf("divergent tool: exit %d %q", code, stdout)
	}
	code, _, stderr = cli(t, "check", "--root", root, "--against-runs=0", "tools/stats/sum.ts")
	if code != 2 || !strings.Contains(stderr, "count of runs") {
		t.Fatalf("--against-runs=0: exit %d %q", code, stderr)
	}
}
