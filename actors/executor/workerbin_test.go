package executor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/executor/internal/workerside"
)

// TestFindWorkerBinaryRefusals: the pool starts the executable itself, not
// an agentos-worker next to it, when there is none, when it is no
// executable file, when this program's build cannot be matched, and when
// it is not this build (here: a script, no Go program at all); it never
// looks anywhere but the executable's directory.
func TestFindWorkerBinaryRefusals(t *testing.T) {
	trusted := workerside.Build{ID: "ours", Trusted: true}
	dir := t.TempDir()
	exe := filepath.Join(dir, "agentos")
	cand := filepath.Join(dir, WorkerBinaryName)
	// One on PATH and in the working directory are never used.
	t.Setenv("PATH", t.TempDir())
	writeWorker(t, filepath.Join(os.Getenv("PATH"), WorkerBinaryName), 0o755)
	t.Chdir(t.TempDir())
	writeWorker(t, WorkerBinaryName, 0o755)

	check := func(name string, own workerside.Build, refused bool, why string) {
		t.Helper()
		b := findWorkerBinary(exe, own)
		if b.Separate || b.Path != exe || b.Refused != refused || !strings.Contains(b.Why, why) {
			t.Errorf("%s: got %+v, want %s itself (refused %v) because %q", name, b, exe, refused, why)
		}
	}
	check("none next to it", trusted, false, "no agentos-worker next to it")
	writeWorker(t, cand, 0o644)
	check("not executable", trusted, true, "is not an executable file (-rw-r--r--): chmod +x it, or remove it")
	if err := os.Chmod(cand, 0o755); err != nil {
		t.Fatal(err)
	}
	check("untrusted own build", workerside.Build{ID: "x", Why: "built from a modified tree"}, true, "cannot be matched to "+cand+": built from a modified tree")
	check("not a Go program", trusted, true, "is not from this program's build (no Go build information")
	if err := os.Remove(cand); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(cand, 0o755); err != nil {
		t.Fatal(err)
	}
	check("a directory", trusted, true, "is not an executable file")
	if b := findWorkerBinary(cand, trusted); b.Separate || b.Path != cand {
		t.Errorf("the worker program itself: got %+v", b)
	}
}

func writeWorker(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\nexit 0\n"), mode); err != nil {
		t.Fatal(err)
	}
}

// TestForeignWorkerHelloRefused: a separate worker whose hello names
// another build than this program's is refused (one replaced after the
// pool checked its file); the executable started again is not asked.
func TestForeignWorkerHelloRefused(t *testing.T) {
	sep := &worker{cmd: exec.Command("/x/agentos-worker"), separate: true}
	if why := foreignWorker(sep, "other"); !strings.Contains(why, `says it is build "other", not this program's`) || !strings.Contains(why, "rebuild both together") {
		t.Errorf("a foreign hello: %q", why)
	}
	if why := foreignWorker(sep, workerside.BuildID().ID); why != "" {
		t.Errorf("this build's hello refused: %q", why)
	}
	if why := foreignWorker(&worker{cmd: exec.Command("/x/agentos")}, "other"); why != "" {
		t.Errorf("the executable's own worker refused: %q", why)
	}
}
