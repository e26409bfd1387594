package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/internal/pgtest"
)

// Issue 13: with journal_postgres_dsn_env in agentos.json, the commands
// record into and read from the PostgreSQL journal, and no journal file
// appears in the tool root.
func TestSharedJournalCommands(t *testing.T) {
	t.Setenv("AGENTOS_TEST_JOURNAL_DSN", pgtest.Start(t))
	root := toolRoot(t, map[string]string{"tools/add.ts": `/** Adds. */
export default function (a: { x: number, y: number }) { return a.x + a.y; }
`})
	cfgPath := filepath.Join(root, "agentos.json")
	var cfg map[string]any
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["journal_postgres_dsn_env"] = "AGENTOS_TEST_JOURNAL_DSN"
	b, _ = json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if code, stdout, stderr := cli(t, "exec", "--root", root, "tools/add.ts", `{"x":2,"y":3}`); code != 0 {
			t.Fatalf("exec: %d %s %s", code, stdout, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(root, ".agentos", "journal.db")); err == nil {
		t.Fatal("exec wrote a journal file: the journal is PostgreSQL's")
	}
	code, stdout, stderr := cli(t, "runs", "--root", root, "--json")
	var out struct{ Runs []struct{ ID, Status string } }
	if err := json.Unmarshal([]byte(stdout), &out); code != 0 || err != nil || len(out.Runs) != 2 || out.Runs[0].Status != "ok" {
		t.Fatalf("runs: %d %s %s %v", code, stdout, stderr, err)
	}
	if code, stdout, stderr := cli(t, "replay", "--root", root, out.Runs[0].ID); code != 0 {
		t.Fatalf("replay: %d %s %s", code, stdout, stderr)
	}
	code, stdout, stderr = cli(t, "runs", "prune", "--root", root, "--keep", "1")
	if code != 0 || !strings.Contains(stdout, "deleted 1 runs") || !strings.Contains(stdout, "autovacuum") {
		t.Fatalf("runs prune: %d %q %s", code, stdout, stderr)
	}

	// The variable unset: every command says so, none falls back to a file.
	t.Setenv("AGENTOS_TEST_JOURNAL_DSN", "")
	code, _, stderr = cli(t, "runs", "--root", root)
	if code == 0 || !strings.Contains(stderr, "AGENTOS_TEST_JOURNAL_DSN") {
		t.Fatalf("runs with the DSN variable unset: %d %s", code, stderr)
	}
}
