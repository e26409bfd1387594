package executor

import "context"

// Run asks the executor actor to run one tool. Sender: the kernel (or any
// actor), with RequestFuture or Request. Reply: *Ran, exactly once, whatever
// happens to the run.
//
// IMPORTANT: Run is local only: Ctx cannot cross nodes. Cancelling Ctx
// cancels the run (Kind "cancelled"; a journaled run stays resumable).
type Run struct {
	Ctx     context.Context
	Request Request
	// Record journals the run when the actor was given a journal.
	Record bool
}

// Ran is the reply to Run.
type Ran struct {
	Result Result
	// RunID is the journal run id ("" when the run was not recorded).
	RunID string
	// Err is a journal failure; the run's own failures are in Result.Error.
	Err error
}

// runPanicked is sent by a run's goroutine to its actor when the run
// panicked, so that the panic reaches the actor's supervisor (the run's
// caller already got an internal error).
type runPanicked struct{ value any }
