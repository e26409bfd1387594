package e2e_test

import (
	"context"
	"encoding/json"
	"github.com/agentos-run/agentos/actors/executor"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/journal"
)

// Issue 13: the nodes of a cluster share one journal in PostgreSQL
// (journal_postgres_dsn_env). A run one node records is every node's to
// read; a run in flight on a live node is left alone by a node that
// starts; once that node is gone, the next node to start resumes it.
func TestSharedJournalAcrossNodes(t *testing.T) {
	t.Setenv("AGENTOS_TEST_JOURNAL_DSN", startPostgres(t))
	node := func(name string) host.Config {
		root := filepath.Join(t.TempDir(), name)
		if _, err := host.Init(root, host.InitOptions{NoGit: true}); err != nil {
			t.Fatal(err)
		}
		// The tool, as the Git upstream would bring it to every node.
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(samples.FibPath)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, samples.FibPath), []byte(samples.FibTool), 0o644); err != nil {
			t.Fatal(err)
		}
		return host.Config{Root: root, Isolation: "inprocess", JournalPostgresDSNEnv: "AGENTOS_TEST_JOURNAL_DSN"}
	}
	a := start(t, node("a"))
	if p := a.Journal().Path(); !strings.HasPrefix(p, "postgres://") || !a.Journal().Shared() {
		t.Fatalf("node a's journal is %s, want the PostgreSQL one", p)
	}
	out, err := a.Call(context.Background(), "exec_tool", json.RawMessage(`{"path":"`+samples.FibPath+`","args":{"n":10}}`))
	if err != nil {
		t.Fatal(err)
	}
	var res struct{ Run string }
	json.Unmarshal(out, &res)

	// A run in flight on a: begun, its tool not finished.
	src, hash, err := a.Executor().Source(samples.FibPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Journal().PutSource(hash, src); err != nil {
		t.Fatal(err)
	}
	inflight, err := a.Journal().Begin(journal.RunMeta{Kind: "exec", Tool: samples.FibPath, Hash: hash, Args: json.RawMessage(`{"n":12}`), Host: journal.Host{Isolation: "process"}})
	if err != nil {
		t.Fatal(err)
	}

	// b starts: it reads a's runs, and leaves the one in flight alone.
	b := start(t, node("b"))
	runs, err := b.Journal().Runs()
	if err != nil || len(runs) != 2 {
		t.Fatalf("node b reads %d runs (%v), want a's 2", len(runs), err)
	}
	for _, r := range b.Recovered() {
		if r.Run.ID == inflight.ID() {
			t.Fatalf("node b touched a run in flight on node a: %+v", r)
		}
	}
	if m, _ := b.Journal().Get(inflight.ID()); m.Status != journal.StatusRunning || m.Owner != a.Journal().Owner() || m.Shown() != journal.StatusRunning {
		t.Fatalf("the run in flight on a, as b sees it: %s (%s), owner %q", m.Status, m.Shown(), m.Owner)
	}
	if _, err := b.Journal().Recover(inflight.ID()); err == nil {
		t.Fatal("node b could recover a run node a holds")
	}

	// a goes away: c starts and finishes the run.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	c := start(t, node("c"))
	var resumed *executor.RecoverReport
	for i, r := range c.Recovered() {
		if r.Run.ID == inflight.ID() {
			resumed = &c.Recovered()[i]
		}
	}
	if resumed == nil || !resumed.Resumed || !resumed.Result.Success {
		t.Fatalf("node c did not resume a's run: %+v", c.Recovered())
	}
	m, err := b.Journal().Get(inflight.ID())
	if err != nil || m.Status != journal.StatusOK || string(m.Result) != "144" {
		t.Fatalf("the resumed run, as b reads it: %s %s (%v)", m.Status, m.Result, err)
	}
}

// journal_postgres_dsn_env naming an unset variable fails the start,
// saying which: a node never records apart from its cluster.
func TestJournalDSNEnvUnset(t *testing.T) {
	root := t.TempDir()
	if _, err := host.Init(root, host.InitOptions{NoGit: true}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AGENTOS_TEST_NO_SUCH_DSN", "")
	rt, err := host.Start(context.Background(), host.Config{Root: root, Isolation: "inprocess", Logger: quiet, JournalPostgresDSNEnv: "AGENTOS_TEST_NO_SUCH_DSN"})
	if err == nil {
		rt.Close()
		t.Fatal("a start with journal_postgres_dsn_env naming an unset variable succeeded")
	}
	if !strings.Contains(err.Error(), "AGENTOS_TEST_NO_SUCH_DSN") || !strings.Contains(err.Error(), "not set") {
		t.Fatalf("error %q does not name the unset variable", err)
	}
	if _, err := os.Stat(filepath.Join(root, host.JournalFile)); err == nil {
		t.Fatal("the failed start created the journal file")
	}
}
