package e2e_test

import (
	"github.com/agentos-run/agentos/internal/host"

	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/transpile"
)

// Issue 11, item 5: old journals stay readable. A run recorded before
// agentos kept a run's limits (the golden journal; a hand-made unfinished
// run) replays and resumes under the tool root's defaults, and the report
// says so.
func TestRunWithoutRecordedLimitsUsesTheDefaults(t *testing.T) {
	root := t.TempDir()
	host.Init(root, host.InitOptions{NoGit: true})
	defaults := executor.Limits{Timeout: 7 * time.Second}
	ex, err := executor.New(executor.Options{Root: root, Isolation: executor.IsolationInProcess, Limits: defaults})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	j, err := journal.Open(filepath.Join(t.TempDir(), "j.db"), journal.Options{Durability: journal.NoSync})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()

	b, err := os.ReadFile(filepath.Join("testdata", "golden", "good-orders.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d journal.Dump
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.Run.Limits != nil {
		t.Fatal("the golden journal records limits: it no longer stands for an old journal")
	}
	if err := j.Import(d); err != nil {
		t.Fatal(err)
	}
	rep, err := executor.Replay(context.Background(), ex, j, d.Run.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Same || rep.Divergence != nil || rep.Limits.Timeout != 7*time.Second || !strings.Contains(rep.LimitsNote, "recorded without its limits") {
		t.Fatalf("replay of an old run: same=%v %v limits=%+v note=%q", rep.Same, rep.Divergence, rep.Limits, rep.LimitsNote)
	}

	// An unfinished run without limits, as an older agentos left it.
	src := []byte("/** Answers. */\nexport default async function (): Promise<number> { return 42; }\n")
	if err := os.WriteFile(filepath.Join(root, "tools", "answer.ts"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	hash := transpile.Hash(src)
	if err := j.PutSource(hash, src); err != nil {
		t.Fatal(err)
	}
	run, err := j.Begin(journal.RunMeta{Kind: "exec", Tool: "tools/answer.ts", Hash: hash, Args: json.RawMessage(`{}`), Host: journal.Host{Isolation: string(executor.IsolationProcess)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Interrupt("cancelled: shutdown"); err != nil {
		t.Fatal(err)
	}
	reports, err := executor.Recover(context.Background(), ex, j)
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 || reports[0].Outcome != executor.OutcomeOK || reports[0].Limits.Timeout != 7*time.Second || !strings.Contains(reports[0].LimitsNote, "the tool root's defaults apply") {
		t.Fatalf("recovery of an old run: %+v", reports)
	}
	// The resumed run now records the limits it ran under.
	if m, err := j.Get(run.ID()); err != nil || m.Status != journal.StatusOK || m.Limits == nil || m.Limits.Timeout != 7*time.Second {
		t.Fatalf("after the resume: %+v %v", m, err)
	}
}
