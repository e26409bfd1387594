package executor

import (
	"errors"

	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
)

// Error is why a run failed; see Kind. errors.Is(err, ErrTimeout) and the
// other sentinels match any Error of the same kind.
type Error = sandbox.Error

// Kind classifies a failed run; the values are stable strings.
type Kind = sandbox.Kind

// Sentinels for errors.Is, one per Kind.
var (
	ErrException   = &Error{Kind: sandbox.KindException}
	ErrTimeout     = &Error{Kind: sandbox.KindTimeout}
	ErrMemoryLimit = &Error{Kind: sandbox.KindMemory}
	ErrStack       = &Error{Kind: sandbox.KindStack}
	ErrOutput      = &Error{Kind: sandbox.KindOutput}
	ErrCompile     = &Error{Kind: sandbox.KindCompile}
	ErrNotFound    = &Error{Kind: sandbox.KindNotFound}
	ErrSecurity    = &Error{Kind: sandbox.KindSecurity}
	ErrInvalidArgs = &Error{Kind: sandbox.KindInvalidArgs}
	ErrNoExport    = &Error{Kind: sandbox.KindNoExport}
	ErrCancelled   = &Error{Kind: sandbox.KindCancelled}
	ErrCrash       = &Error{Kind: sandbox.KindCrash}
	ErrUnsettled   = &Error{Kind: sandbox.KindUnsettled}
	ErrHostFailure = &Error{Kind: sandbox.KindHostFailure}
	ErrInternal    = &Error{Kind: sandbox.KindInternal}
)

// Errors of RecoverRun (recover.go).
var (
	// ErrQuarantined: the run crashed its host (or its host died under it)
	// while it ran in-process; it is resumed only in process isolation.
	ErrQuarantined = errors.New("executor: the run is quarantined")
	// ErrNotResumable: the run is not unfinished (it ended, or is not a
	// tool run).
	ErrNotResumable = errors.New("executor: the run cannot be resumed")
)
