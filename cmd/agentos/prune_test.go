package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bigReadTool reads a 1 MB data file three times: each run journals 3 MB
// of responses, stored once.
const bigReadTool = `/** Reads the big data file three times and returns its length. */
export default async function () {
  let n = 0;
  for (let i = 0; i < 3; i++) n += (await tgp.read_file('big.txt')).length;
  return n;
}
`

// Issue 10, item 10: the journal grew without bound and nothing deleted
// old runs. 'agentos runs prune' deletes old runs and the payloads only
// they used, and compacts the file.
func TestRunsPrune(t *testing.T) {
	root := toolRoot(t, map[string]string{"tools/big.ts": bigReadTool})
	for i := range 4 {
		// A different file each run: no payload is shared between runs.
		if err := os.WriteFile(filepath.Join(root, "big.txt"), []byte(strings.Repeat(string(rune('a'+i)), 1<<20)), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, stdout, stderr := cli(t, "exec", "--root", root, "tools/big.ts"); code != 0 {
			t.Fatalf("exec: %d %s %s", code, stdout, stderr)
		}
	}
	jpath := filepath.Join(root, ".agentos", "journal.db")
	fi, _ := os.Stat(jpath)
	if fi.Size() > 10<<20 { // inline: 12 MB of payloads, and the pages they churn
		t.Fatalf("4 runs reading 3 MB each take %d MB: each run's payload must be stored once", fi.Size()>>20)
	}
	code, stdout, stderr := cli(t, "runs", "prune", "--root", root, "--keep", "1", "--json")
	var rep struct {
		Runs, Blobs, Kept     int
		FileBefore, FileAfter int64 `json:"-"`
		Before                int64 `json:"file_before"`
		After                 int64 `json:"file_after"`
		Compacted             bool  `json:"compacted"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); code != 0 || err != nil {
		t.Fatalf("runs prune: %d %q %q %v", code, stdout, stderr, err)
	}
	if rep.Runs != 3 || rep.Blobs != 3 || rep.Kept != 1 || !rep.Compacted || rep.After >= rep.Before || rep.After > 3<<20 {
		t.Fatalf("prune report: %s", stdout)
	}
	if _, stdout, _ := cli(t, "runs", "--root", root, "--json"); strings.Count(stdout, `"id"`) != 1 {
		t.Fatalf("runs after the prune: %s", stdout)
	}
	// The kept run still replays from the journal.
	var out struct{ Runs []struct{ ID string } }
	_, stdout, _ = cli(t, "runs", "--root", root, "--json")
	json.Unmarshal([]byte(stdout), &out)
	rows := out.Runs
	if code, stdout, stderr := cli(t, "replay", "--root", root, rows[0].ID); code != 0 {
		t.Fatalf("replay after prune: %d %s %s", code, stdout, stderr)
	}
	// Without bounds, the configured retention (30 days by default) keeps it.
	if code, stdout, _ := cli(t, "runs", "prune", "--root", root); code != 0 || !strings.Contains(stdout, "deleted 0 runs") || !strings.Contains(stdout, "1 runs kept") {
		t.Fatalf("prune by the default retention: %d %s", code, stdout)
	}
	for _, bad := range [][]string{{"--older-than", "soon"}, {"--older-than", "-1d"}, {"--keep", "-2"}, {"extra"}} {
		if code, _, stderr := cli(t, append([]string{"runs", "prune", "--root", root}, bad...)...); code != 2 {
			t.Errorf("runs prune %v: exit %d (%s), want 2", bad, code, stderr)
		}
	}
}
