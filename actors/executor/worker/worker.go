// Package worker is the sandbox worker's side of the executor, for a
// program that is only a worker (cmd/agentos-worker): it links goja, the
// confinement and the frame protocol, and none of the actor system, the
// cluster, the journal's databases or the model's SDK, so that a worker
// starts in a fraction of the time the whole agentos binary takes.
//
// The executor's pool starts such a program when it finds it next to its
// own executable, built from the same sources (see executor.WorkerBinary);
// otherwise it starts its own executable again, which serves as a worker
// through executor.WorkerMain (or cgoworker.Main).
//
// IMPORTANT: Main applies Landlock through the Go runtime's all-threads
// system call, which a program that links cgo cannot use: there the
// worker reports Landlock missing (and refuses to serve in the required
// mode). Such a program uses package cgoworker instead.
package worker

import "github.com/agentos-run/agentos/actors/executor/internal/workerside"

// Main serves as a sandbox worker and exits if this process was started as
// one (by an executor's pool); otherwise it returns at once. IMPORTANT: a
// worker program MUST call it first thing in main.
func Main() { workerside.Main(workerside.Options{}) }

// Build says which build this program is: ID, and whether ID can tell
// two builds apart (Trusted, or Why not). A pool runs a worker binary
// found next to its executable only if both builds are trusted and equal.
func Build() (id string, trusted bool, why string) {
	b := workerside.BuildID()
	return b.ID, b.Trusted, b.Why
}
