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

// Errors of the executor actor's requests (not of a tool: those are
// Result.Error). Client maps a reply's Failure back to them, so errors.Is
// works on what it returns; a refused token wraps capability.ErrInvalid,
// ErrRevoked or ErrExpired instead.
var (
	// ErrJournal: the run could not be recorded in the journal (its
	// source, its start); it did not run. Check the journal's disk.
	ErrJournal = errors.New("executor: the run could not be journaled")
	// ErrRunKeyInUse: a run with the same run key is in flight; choose a
	// unique key (NewRunKey).
	ErrRunKeyInUse = errors.New("executor: the run key is in use by a run in flight")
	// ErrNoAuthority: a run carries a caller's token but the executor actor
	// was started without ActorOptions.Authority to verify it.
	ErrNoAuthority = errors.New("executor: the actor has no capability authority to verify the caller's token")
	// ErrNoCaller: a run without a caller was sent to an executor actor
	// that requires one (ActorOptions.RequireCaller).
	ErrNoCaller = errors.New("executor: the run has no caller")
	// ErrStaleTool: the run asked for a content hash of its entry file
	// (RunRequest.Hash) that this executor's tool root does not hold: it
	// holds another version. The caller runs it elsewhere (its own node).
	ErrStaleTool = errors.New("executor: the tool here is another version than the caller's")

	// ErrNotCleared: a run placed from another node was refused by this
	// node's approval gate (ActorOptions.AdmitRemote): its version needs an
	// approval this node has not recorded (approvals are kept per node).
	// The placing node runs it itself, where its gate cleared it.
	ErrNotCleared = errors.New("executor: this node's approval gate did not clear the run")
	// ErrUnavailable: the executor actor did not answer in time (it may be
	// restarting or stopped); try again.
	ErrUnavailable = errors.New("executor: the executor actor did not answer")
	// ErrProtocol: the actor answered with an unexpected message (a bug).
	ErrProtocol = errors.New("executor: unexpected reply")
)
