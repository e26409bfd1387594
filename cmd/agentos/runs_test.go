package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/journal"
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

// runsPage is one page of 'agentos runs --json'.
type runsPageJSON struct {
	Runs []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Calls  int    `json:"calls"`
	} `json:"runs"`
	Before string `json:"before"`
	After  string `json:"after"`
}

func runsJSON(t *testing.T, args ...string) runsPageJSON {
	t.Helper()
	code, stdout, stderr := cli(t, append([]string{"runs", "--json"}, args...)...)
	var p runsPageJSON
	if err := json.Unmarshal([]byte(stdout), &p); err != nil || code != 0 {
		t.Fatalf("runs --json %v: %d %v %q %q", args, code, err, stdout, stderr)
	}
	return p
}

// TestRunsPaging (issue 28 item 4): 'agentos runs' shows a page, the newest
// runs oldest first, and names the cursor of the next one; walking the
// pages back with --before, or forward with --after, shows every run once
// with its count; --limit 0 streams them all; bad paging flags are usage
// errors that say what to give.
func TestRunsPaging(t *testing.T) {
	root, first := recorded(t)
	j, err := journal.Open(filepath.Join(root, ".agentos", "journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{first}
	calls := map[string]int{first: 1}
	for i := range 11 {
		run, err := j.Begin(journal.RunMeta{Kind: "exec", Tool: "tools/total.ts"})
		if err != nil {
			t.Fatal(err)
		}
		h := run.Middleware()(driver.HostFunc(func(context.Context, driver.Call) (json.RawMessage, error) { return json.RawMessage(`1`), nil }))
		for s := range i % 3 {
			h.Do(context.Background(), driver.Call{Seq: uint64(s + 1), Driver: "clock", Op: "now"})
		}
		if err := run.End(journal.StatusOK, nil, nil); err != nil {
			t.Fatal(err)
		}
		want, calls[run.ID()] = append(want, run.ID()), i%3
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	// Back from the newest, 5 a page: [7..11], [2..6], [0..1].
	var got []string
	p := runsJSON(t, "--root", root, "--limit", "5")
	for pages := 1; ; pages++ {
		var ids []string
		for _, r := range p.Runs {
			ids = append(ids, r.ID)
			if r.Calls != calls[r.ID] || r.Status != "ok" {
				t.Errorf("run %s listed %s with %d calls; want ok, %d", r.ID, r.Status, r.Calls, calls[r.ID])
			}
		}
		got = append(ids, got...)
		if p.Before == "" {
			if pages != 3 {
				t.Errorf("%d pages of 5 for 12 runs, want 3", pages)
			}
			break
		}
		if p.Before != ids[0] {
			t.Fatalf("the next page's cursor %q is not the page's first (oldest) run %q", p.Before, ids[0])
		}
		p = runsJSON(t, "--root", root, "--limit", "5", "--before", p.Before)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages back:\n%v\nwant every run once, oldest first:\n%v", got, want)
	}
	// Forward from the first run.
	got = []string{first}
	for p = runsJSON(t, "--root", root, "--limit", "4", "--after", first); ; p = runsJSON(t, "--root", root, "--limit", "4", "--after", p.After) {
		for _, r := range p.Runs {
			got = append(got, r.ID)
		}
		if p.After == "" {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages forward:\n%v\nwant\n%v", got, want)
	}
	all := runsJSON(t, "--root", root, "--limit", "0")
	if len(all.Runs) != 12 || all.Before != "" || all.Runs[0].ID != first {
		t.Fatalf("--limit 0: %+v", all)
	}
	// The default page holds these 12 runs: no cursor, as before paging.
	if p := runsJSON(t, "--root", root); len(p.Runs) != 12 || p.Before != "" {
		t.Fatalf("default page: %+v", p)
	}
	// The table names the next page.
	code, stdout, _ := cli(t, "runs", "--root", root, "--limit", "2")
	if code != 0 || strings.Count(stdout, "tools/total.ts") != 2 || !strings.Contains(stdout, "older runs: agentos runs --before "+want[10]) {
		t.Fatalf("runs --limit 2: %d %q", code, stdout)
	}

	for _, bad := range []struct {
		args []string
		says string
	}{
		{[]string{"--limit", "-1"}, "give a number of runs"},
		{[]string{"--limit", "x"}, "invalid value"},
		{[]string{"--before", first, "--after", first}, "give one"},
		{[]string{"--before", first, "--limit", "0"}, "give --limit N"},
		{[]string{"--before", "nosuchrun"}, "nosuchrun"},
		{[]string{"--after", "2"}, "matches"},
		{[]string{"--tool", "tools/total.ts", "--before", first}, "--tool lists every run"},
	} {
		code, stdout, stderr := cli(t, append([]string{"runs", "--root", root}, bad.args...)...)
		if code != 2 || !strings.Contains(stderr, bad.says) {
			t.Errorf("runs %v: exit %d, stderr %q (stdout %q); want 2 and %q", bad.args, code, stderr, stdout, bad.says)
		}
	}
}
