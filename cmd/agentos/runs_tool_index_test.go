package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentos-run/agentos/journal"
)

// scanOnly is a runSource without the tool index (as a serving node's).
type scanOnly struct{ j *journal.Journal }

func (s scanOnly) EachRun(q journal.RunQuery, fn func(journal.RunMeta) error) error {
	return s.j.EachRun(q, fn)
}
func (s scanOnly) Close() error { return nil }

// 'agentos runs --tool' reads the journal's tool index when it opens the
// journal itself, and prints what reading every run prints: the same runs
// in the same order, the same versions with the same counts.
func TestRunsToolFromTheIndex(t *testing.T) {
	j, err := journal.Open(filepath.Join(t.TempDir(), "journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for i := range 12 {
		meta := journal.RunMeta{Kind: "exec", Tool: "tools/x.ts", Hash: fmt.Sprintf("%064x", i%3), Pinned: i%2 == 0}
		if i%4 == 3 {
			meta.Tool, meta.Modules = "tools/y.ts", []journal.Module{{Path: "tools/x.ts", Hash: fmt.Sprintf("%064x", 1)}}
		}
		run, err := j.Begin(meta)
		if err == nil {
			err = run.End(journal.StatusOK, nil, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	rows, versions, err := toolRuns(j, "tools/x.ts")
	if err != nil {
		t.Fatal(err)
	}
	wantRows, wantVersions, err := toolRuns(scanOnly{j}, "tools/x.ts")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal([]any{rows, versions})
	want, _ := json.Marshal([]any{wantRows, wantVersions})
	if string(got) != string(want) || len(rows) != 9 || len(versions) != 3 {
		t.Errorf("from the index:\n%s\nreading every run (9 runs, 3 versions):\n%s", got, want)
	}
}
