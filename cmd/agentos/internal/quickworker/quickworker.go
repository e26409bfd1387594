// Package quickworker serves agentos started again as its own sandbox
// worker (when no agentos-worker sits beside it, as under `go run`) from
// its init, before Go initialises the packages only the other commands
// need.
//
// Go initialises the first package, in the order of import paths, whose
// imports are all initialised. This package imports only the worker (goja,
// the confinement, the frame protocol), so its init runs once those are
// ready, before the packages that need something sorting after them: 297
// inits instead of 394, and a worker ready in about two thirds of the time
// (docs/PERFORMANCE.md). Everything the worker uses is among its imports,
// so all of it is initialised; the worker never returns (it exits when its
// parent closes its stdin). In any other process the init does nothing.
package quickworker

import "github.com/agentos-run/agentos/actors/executor/worker/cgoworker"

func init() { cgoworker.Main() }
