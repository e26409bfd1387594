package journal

import (
	"errors"
	"fmt"
)

// Errors of the journal. Test with errors.Is.
var (
	// ErrNoRun: no run with that id is in the journal.
	ErrNoRun = errors.New("no such run in the journal")
	// ErrReadOnly: a write to a journal opened with Options.ReadOnly.
	ErrReadOnly = errors.New("the journal was opened read-only")
	// ErrClosed: the journal was closed.
	ErrClosed = errors.New("the journal is closed")
	// ErrAmbiguous: a run id prefix matches more than one run.
	ErrAmbiguous = errors.New("the run id prefix matches several runs")
	// ErrFormat: the journal file has a storage format this version does
	// not read (written by a newer agentos).
	ErrFormat = errors.New("unknown journal storage format")
	// ErrLocked: another process holds the journal file open (a serving
	// node, or another agentos command in the same tool root); Open gave up
	// waiting for its lock.
	ErrLocked = errors.New("another agentos process holds it open")
	// ErrClaimed: another node holds a live claim on the run (see
	// Journal.Claim): it is running it. Wait for its claim to lapse (its
	// node died) or leave the run to it.
	ErrClaimed = errors.New("another node holds the run")
	// ErrClaimLost: this node's claim on a run lapsed and another node took
	// the run over; this node no longer journals its calls.
	ErrClaimLost = errors.New("the claim on the run was lost")
	// ErrEnded: the run has ended (ok or failed): it cannot be claimed,
	// resumed or written as a running run again; replay it instead.
	ErrEnded = errors.New("the run has ended")
	// ErrFenced: a write carried a fencing token older than the run's
	// current one: the run was claimed again since this Journal claimed it
	// (this node was paused or cut off past its lease), so the write is
	// refused at the store. It wraps ErrClaimed.
	ErrFenced = fmt.Errorf("%w (this node's fencing token for it is stale)", ErrClaimed)
)

// Divergence codes: stable, greppable, documented in docs/REPLAY.md.
const (
	// CodeRequestDiffers: the code asked for different I/O than recorded.
	CodeRequestDiffers = "AGENTOS-J001"
	// CodeBeyondEnd: the code made a call after the recorded run had ended.
	CodeBeyondEnd = "AGENTOS-J002"
	// CodeUnconsumed: the code ended without making calls the recording has.
	CodeUnconsumed = "AGENTOS-J003"
	// CodeSealed: the run read a secret (a file under a secret path) whose
	// content the journal keeps only as a hash, and replay could not read
	// the same content again: the file is gone or changed.
	CodeSealed = "AGENTOS-J004"
)

// DivergenceError says where a replayed run stopped following its recording.
type DivergenceError struct {
	Code     string `json:"code"` // CodeRequestDiffers, CodeBeyondEnd, CodeUnconsumed or CodeSealed
	RunID    string `json:"run_id"`
	Seq      uint64 `json:"seq"`
	Expected string `json:"expected,omitempty"` // the recorded call, "driver.op request" ("" beyond the end)
	Actual   string `json:"actual,omitempty"`   // the call the code made ("" when it made none)
}

func (e *DivergenceError) Error() string {
	switch e.Code {
	case CodeBeyondEnd:
		return fmt.Sprintf("[%s] replay of run %s diverged at call #%d: the recording ended, but the code made another call: %s", e.Code, e.RunID, e.Seq, e.Actual)
	case CodeSealed:
		return fmt.Sprintf("[%s] replay of run %s cannot answer call #%d (%s): the run read a secret (a file under secret_paths) that the journal keeps only as a hash, and %s; replay needs the file present with the content the run read", e.Code, e.RunID, e.Seq, e.Expected, e.Actual)
	case CodeUnconsumed:
		return fmt.Sprintf("[%s] replay of run %s diverged: the code ended after call #%d, but the recording continues with #%d: %s", e.Code, e.RunID, e.Seq-1, e.Seq, e.Expected)
	}
	return fmt.Sprintf("[%s] replay of run %s diverged at call #%d: expected %s, got %s", e.Code, e.RunID, e.Seq, e.Expected, e.Actual)
}
