package main

import (
	"encoding/json"
	"strings"
	"testing"
)

const totalTool = `/** Sums the amounts of a CSV of orders. */
export default async function (args: { file: string }) {
  const rows = (await tgp.read_file(args.file)).trim().split('\n').slice(1);
  return rows.map((r) => Number(r.split(',')[1])).reduce((a, b) => a + b + 1, 0);
}
`

// recorded makes a tool root, runs the total tool once with the journal on,
// and returns the root and the run id.
func recorded(t *testing.T) (root, id string) {
	t.Helper()
	root = toolRoot(t, map[string]string{"tools/total.ts": totalTool, "orders.csv": "id,amount\n1,40\n2,60\n"})
	code, stdout, stderr := cli(t, "exec", "--root", root, "--json", "tools/total.ts", `{"file": "orders.csv"}`)
	var res struct {
		Success bool   `json:"success"`
		Run     string `json:"run"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != 0 || !res.Success || res.Run == "" {
		t.Fatalf("exec: %d %q %q", code, stdout, stderr)
	}
	return root, res.Run
}

func TestRuns(t *testing.T) {
	root, id := recorded(t)
	code, stdout, _ := cli(t, "runs", "--root", root)
	if code != 0 || !strings.Contains(stdout, id) || !strings.Contains(stdout, "tools/total.ts") || !strings.Contains(stdout, " ok ") {
		t.Fatalf("runs: %d %q", code, stdout)
	}
	code, stdout, _ = cli(t, "runs", "--root", root, "--json")
	var out struct {
		Runs []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Calls  int    `json:"calls"`
		} `json:"runs"`
	}
	err := json.Unmarshal([]byte(stdout), &out)
	rows := out.Runs
	if err != nil || code != 0 || len(rows) != 1 || rows[0].ID != id || rows[0].Calls != 1 || rows[0].Status != "ok" {
		t.Fatalf("runs --json: %d %q %v", code, stdout, err)
	}
	code, _, stderr := cli(t, "runs", "--root", toolRoot(t, nil))
	if code != 2 || !strings.Contains(stderr, "no journal at") {
		t.Fatalf("no journal: %d %q", code, stderr)
	}
	if code, _, _ := cli(t, "exec", "--root", root, "--no-journal", "tools/total.ts", `{"file": "orders.csv"}`); code != 0 {
		t.Fatal("exec --no-journal failed")
	}
	if _, stdout, _ := cli(t, "runs", "--root", root, "--json"); strings.Count(stdout, `"id"`) != 1 {
		t.Fatalf("--no-journal recorded a run: %s", stdout)
	}
}
