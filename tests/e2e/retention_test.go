package e2e_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/internal/testutil"
)

// Issue 10, item 10: nothing ever deleted a run, so the journal grew
// without bound. A runtime applies Config.Retention when it starts and
// every RetainEvery while it runs: with keep_runs 2, the journal holds the
// two latest runs.
func TestRetention(t *testing.T) {
	root := t.TempDir()
	if _, err := host.Init(root, host.InitOptions{NoGit: true}); err != nil {
		t.Fatal(err)
	}
	cfg := host.Config{Root: root, Isolation: "inprocess", Retention: host.RetentionConfig{KeepRuns: 2}}
	execFib := func(rt *host.Runtime, n int) {
		for range n {
			if _, err := rt.Call(context.Background(), "exec_tool", json.RawMessage(`{"path":"`+samples.FibPath+`","args":{"n":5}}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	runs := func(rt *host.Runtime) int {
		rs, err := rt.Journal().Runs()
		if err != nil {
			t.Fatal(err)
		}
		return len(rs)
	}
	old := host.RetainEvery
	host.RetainEvery = time.Hour
	rt := start(t, cfg)
	writeFib(t, rt)
	execFib(rt, 4)
	if n := runs(rt); n != 4 {
		t.Fatalf("%d runs recorded, want 4", n)
	}
	rt.Close()

	// At start.
	rt = start(t, cfg)
	if n := runs(rt); n != 2 {
		t.Fatalf("after a start with keep_runs 2: %d runs", n)
	}
	rt.Close()

	// While running.
	host.RetainEvery = 20 * time.Millisecond
	defer func() { host.RetainEvery = old }()
	rt = start(t, cfg)
	execFib(rt, 3)
	testutil.Eventually(t, 10*time.Second, "two runs journaled", func() bool { return runs(rt) == 2 })
}
