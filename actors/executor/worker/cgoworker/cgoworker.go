// Package cgoworker is the sandbox worker's side of the executor for a
// program that links cgo, as the agentos binary does (tree-sitter, and the
// net package's resolver): there the Go runtime refuses to run a system
// call on every thread (C may have started threads it does not know), so
// Landlock is applied through go-landlock, which reaches each thread
// through libpsx. A program without cgo uses package worker
// (cmd/agentos-worker), which links neither: libpsx alone would make it a
// dynamically linked program, about 2 ms slower to start.
package cgoworker

import (
	"github.com/landlock-lsm/go-landlock/landlock"

	"github.com/agentos-run/agentos/actors/executor/internal/workerside"
)

// Main serves as a sandbox worker and exits if this process was started
// as one (by an executor's pool); otherwise it returns at once.
// IMPORTANT: call it before anything a tool must not reach is opened.
func Main() { workerside.Main(workerside.Options{Restrict: Restrict}) }

// Restrict is a confine.Restrictor that works in a program that links
// cgo: go-landlock's. It handles every access class of the kernel's ABI
// (the ABI go-landlock detects itself, downgraded as confine's is) and
// allows nothing; go-landlock adds one rule of its own, listing
// /proc/<pid>/task, which libpsx needs to reach every thread.
func Restrict(int) error { return landlock.V11.BestEffort().Restrict() }
