package forge_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/journal"
)

// issue 25 item 8, the Go API: a forge run replays from its journal with
// the model gone, and says it followed its recording; the registry and
// Git see nothing (the tool's commit stays the run's).
func TestReplayForgeGoAPI(t *testing.T) {
	srv := llmtest.NewServer([]llmtest.Step{submit(buggyCode), submit(fibCode)})
	e := newEnv(t, srv, t.TempDir())
	res, err := e.f.Forge(context.Background(), "a tool that returns the n-th Fibonacci number", nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	rep, err := forge.Replay(context.Background(), e.j, res.RunID, forge.ReplayOptions{Checker: check.New(check.Options{}), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Same || rep.Divergence != nil || rep.Error != "" || rep.Result.Path != res.Path || len(rep.Result.Attempts) != 2 || rep.Result.Commit != "" || rep.Recorded.Commit != res.Commit || srv.Requests() != 2 {
		t.Fatalf("replay: %+v (requests %d)", rep, srv.Requests())
	}
	if _, err := forge.Replay(context.Background(), e.j, res.RunID, forge.ReplayOptions{}); !errors.Is(err, forge.ErrOptions) {
		t.Fatalf("a replay without a checker: %v", err)
	}
}

// A forge that has not ended has nothing to compare with: refused, saying
// how to resume it; so is a run of another kind.
func TestReplayForgeRefusesUnended(t *testing.T) {
	srv := llmtest.NewServer([]llmtest.Step{submit(buggyCode)})
	defer srv.Close()
	e := newEnv(t, srv, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	_, err := e.f.Forge(ctx, "a tool that returns the n-th Fibonacci number", func(llm.Usage) error {
		cancel()
		return context.Canceled
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	runs, _ := e.j.Unfinished()
	if len(runs) != 1 {
		t.Fatalf("unfinished: %+v", runs)
	}
	opts := forge.ReplayOptions{Checker: check.New(check.Options{}), Logger: quiet}
	if _, err := forge.Replay(context.Background(), e.j, runs[0].ID, opts); !errors.Is(err, forge.ErrSpec) || !strings.Contains(err.Error(), "agentos recover --run") {
		t.Fatalf("replay of an unended forge: %v", err)
	}
	run, err := e.j.Begin(journal.RunMeta{Kind: "exec", Tool: "tools/x.ts"})
	if err != nil {
		t.Fatal(err)
	}
	_ = run.End(journal.StatusOK, []byte("1"), nil)
	if _, err := forge.Replay(context.Background(), e.j, run.ID(), opts); !errors.Is(err, forge.ErrSpec) || !strings.Contains(err.Error(), "not a forge") {
		t.Fatalf("replay of a tool run as a forge: %v", err)
	}
}
