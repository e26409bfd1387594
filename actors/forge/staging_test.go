package forge_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentos-run/agentos/actors/executor"
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

// The candidate and its tests are tested from memory (the executor's
// overlay), never written: a forge passes where the staging directory
// cannot even be created (a file stands in its place).
func TestCandidatesAreNeverWritten(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "tools", ".forge"), []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer([]llmtest.Step{submit(fibCode)})
	defer srv.Close()
	e := newEnv(t, srv, root)
	res, err := e.f.Forge(context.Background(), "a tool that returns the n-th Fibonacci number", nil)
	if err != nil || len(res.Attempts) != 1 || !res.Attempts[0].Passed {
		t.Fatalf("forge with no staging directory on disk: %+v %v", res, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "tools", ".forge")); err != nil || string(b) != "not a directory" {
		t.Fatalf("the file in the staging directory's place changed: %q %v", b, err)
	}
}

// The forge stages where the executor runs modules from memory.
func TestStagingDirIsTheExecutors(t *testing.T) {
	if want := "tools/" + executor.StagingDir + "/"; forge.StagingDir != want {
		t.Fatalf("the forge stages under %s, the executor runs from memory under %s", forge.StagingDir, want)
	}
}
