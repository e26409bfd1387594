package forge_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/vfs"
)

// REVIEW (fixed): a crash while a candidate's tests ran left it in the tree,
// where the next start registered it. Candidates are now staged under
// tools/.forge/ (never registered, never committed) and cleaned at start.
func TestCrashDuringTestsLeavesNoCandidate(t *testing.T) {
	root := t.TempDir()
	first := llmtest.NewServer([]llmtest.Step{submit(buggyCode)})
	defer first.Close()
	e := newEnv(t, first, root)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := e.f.Forge(ctx, "a tool that returns the n-th Fibonacci number", func(llm.Usage) error {
		cancel()
		return context.Canceled
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	// The crash happened inside runTests: the candidate had been staged.
	if err := e.jl.WriteFile("tools/.forge/math/fib.ts", []byte(buggyCode)); err != nil {
		t.Fatal(err)
	}
	runs, _ := e.j.Unfinished()
	e.j.Close()
	second := llmtest.NewServer([]llmtest.Step{submit(buggyCode), submit(buggyCode)})
	defer second.Close()
	e2 := newEnv(t, second, root)
	_, err = e2.f.Resume(context.Background(), runs[0].ID, nil)
	if !errors.Is(err, forge.ErrGaveUp) {
		t.Fatalf("resume: %v", err)
	}
	if _, err := e2.jl.ReadFile("tools/math/fib.ts"); !errors.Is(err, vfs.ErrNotFound) {
		t.Fatalf("a failing candidate stayed in the tree after the forge gave up: %v", err)
	}
	if staged, _ := e2.jl.List("tools/.forge"); len(staged) != 0 {
		t.Fatalf("staged candidates left: %v", staged)
	}
	if _, ok := e2.reg.Get("tools/.forge/math/fib.ts"); ok {
		t.Fatal("a staged candidate was registered")
	}
}
