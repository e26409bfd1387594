package forge_test

import (
	"context"
	"testing"

	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
)

// REVIEW: a forge cancelled (actor stopping / caller gone) right after the
// model answered with a GOOD tool: the test run sees the cancelled ctx, its
// "failure" is journaled as a real test outcome, the next model call fails
// with a *driver.Error (not context.Canceled), so the run is Ended failed:
// not resumable, and the passing tool is lost.
func TestCancelledForgeStaysResumable(t *testing.T) {
	root := t.TempDir()
	srv := llmtest.NewServer([]llmtest.Step{submit(fibCode), submit(fibCode), submit(fibCode)})
	defer srv.Close()
	e := newEnv(t, srv, root)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := e.f.Forge(ctx, "a tool that returns the n-th Fibonacci number", func(llm.Usage) error {
		cancel() // cancelled while the forge runs, e.g. Runtime.Close
		return nil
	})
	t.Logf("err=%v attempts=%+v", err, res.Attempts)
	runs, _ := e.j.Unfinished()
	if len(runs) != 1 {
		t.Fatalf("cancelled forge is not resumable: unfinished=%+v err=%v", runs, err)
	}
	e.j.Close()
	srv2 := llmtest.NewServer([]llmtest.Step{submit(fibCode), submit(fibCode), submit(fibCode)})
	defer srv2.Close()
	e2 := newEnv(t, srv2, root)
	res, err = e2.f.Resume(context.Background(), runs[0].ID, nil)
	if err != nil || len(res.Attempts) == 0 || !res.Attempts[0].Passed {
		t.Fatalf("resume replays the cancellation as a real outcome: %v %+v", err, res.Attempts)
	}
}
