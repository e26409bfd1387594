package executor

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentos-run/agentos/actors/executor/internal/workerside"
)

// WorkerBinaryName is the sandbox worker program a pool starts when it
// finds it next to its own executable (cmd/agentos-worker): it links only
// what a worker needs, so it starts several times faster than the whole
// program does.
const WorkerBinaryName = "agentos-worker"

// WorkerBinary says which program a pool with no WorkerCommand starts as
// its sandbox workers.
type WorkerBinary struct {
	// Path is the program: WorkerBinaryName next to the executable when
	// Separate, else the executable itself (which serves as a worker
	// through WorkerMain).
	Path     string `json:"path"`
	Separate bool   `json:"separate"`
	// Why the separate worker is not used, when it is not.
	Why string `json:"why,omitempty"`
	// Refused: a WorkerBinaryName is next to the executable but is not
	// used (see Why).
	Refused bool `json:"refused,omitempty"`
}

// String says it for a person: "/usr/local/bin/agentos-worker (separate)".
func (b WorkerBinary) String() string {
	if b.Separate {
		return b.Path + " (" + WorkerBinaryName + ", built with this program)"
	}
	return b.Path + " (this program started again: " + b.Why + ")"
}

// FindWorkerBinary returns the worker program for this executable: see
// findWorkerBinary.
func FindWorkerBinary() (WorkerBinary, error) {
	exe, err := os.Executable()
	if err != nil {
		return WorkerBinary{}, fmt.Errorf("finding this program's executable to start a sandbox worker: %w", err)
	}
	return findWorkerBinary(exe, workerside.BuildID()), nil
}

// findWorkerBinary chooses between WorkerBinaryName in exe's directory and
// exe itself. IMPORTANT: the separate worker is looked for ONLY in exe's
// directory (never on PATH or in the working directory), and used only when
// it is a regular executable file whose recorded build (read from the file,
// not by running it) is own, and own is Trusted: a stale or foreign worker
// is never started, the executable is.
func findWorkerBinary(exe string, own workerside.Build) WorkerBinary {
	cand := filepath.Join(filepath.Dir(exe), WorkerBinaryName)
	if cand == exe {
		return WorkerBinary{Path: exe, Why: "it is the worker program"}
	}
	fi, err := os.Stat(cand)
	if errors.Is(err, fs.ErrNotExist) {
		return WorkerBinary{Path: exe, Why: "no " + WorkerBinaryName + " next to it"}
	}
	self := WorkerBinary{Path: exe, Refused: true}
	switch {
	case err != nil:
		self.Why = fmt.Sprintf("%s cannot be examined: %v", cand, err)
		return self
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		self.Why = fmt.Sprintf("%s is not an executable file (%v): chmod +x it, or remove it", cand, fi.Mode())
		return self
	case !own.Trusted:
		self.Why = fmt.Sprintf("this program's build cannot be matched to %s: %s; build both from a clean checkout (go build ./cmd/...) or stamp both (-ldflags -X, see docs/SECURITY.md)", cand, own.Why)
		return self
	}
	theirs, err := buildOfFile(cand)
	if err != nil || !theirs.Trusted || theirs.ID != own.ID {
		self.Why = fmt.Sprintf("%s is not from this program's build (%s): rebuild both together with go build ./cmd/..., or remove it", cand, buildSays(theirs, err))
		return self
	}
	return WorkerBinary{Path: cand, Separate: true}
}

// buildSays describes a worker file's build for an error.
func buildSays(b workerside.Build, err error) string {
	switch {
	case err != nil:
		return "no Go build information: " + err.Error()
	case !b.Trusted:
		return b.Why
	}
	return "build " + b.ID + ", this program is " + workerside.BuildID().ID
}

// buildOfFile returns the Build of the Go program in file, read from the
// build information Go records in it, without running it.
func buildOfFile(file string) (workerside.Build, error) {
	bi, err := buildinfo.ReadFile(file)
	if err != nil {
		return workerside.Build{}, err
	}
	return workerside.BuildOf(bi), nil
}
