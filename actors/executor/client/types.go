package client

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/journal"
)

// Result is what a run returns (exec_tool's result). Error has the type
// executor.Error names; its Kind is one of the executor's stable kinds.
type Result struct {
	Success bool            `json:"success"`
	Result  json.RawMessage `json:"result"`
	Logs    []string        `json:"logs"`
	Error   *sandbox.Error  `json:"error,omitempty"`
	// Hash is the content hash of the tool's source ("" if it was not read).
	Hash string `json:"hash,omitempty"`
	// Calls is how many driver calls the run made.
	Calls uint64 `json:"calls"`
	// Duration is the wall time of the run, transpile included.
	Duration time.Duration `json:"duration_ns"`
}

// ReplayOptions adjust a replay (executor.ReplayWith, Client.Replay). The
// zero value replays the recorded tool under the run's recorded limits.
type ReplayOptions struct {
	// Patched, when not nil, is a new version of the tool fed the recorded
	// I/O instead of the recorded source.
	Patched []byte
	// Limits override the run's recorded limits field by field (zero
	// fields keep the recorded ones), e.g. a longer timeout.
	Limits sandbox.Limits
	// Sources replace the recorded source of modules the run required, by
	// root-relative path (e.g. "tools/lib/x.ts"): the recorded I/O fed to
	// a new version of a library the tool uses. A path the run did not
	// record is not affected (a new require reads the tree).
	Sources map[string][]byte
	// MaxTimeout, when positive, caps the replay's timeout: a run whose
	// timeout (its recorded one, else the executor's default) is longer,
	// or unbounded, is replayed under MaxTimeout instead, and LimitsNote
	// says so. It is how the registration gate bounds its replays.
	MaxTimeout time.Duration
}

// Errors of the executor actor's requests (not of a tool: those are
// Result.Error). The Client maps a reply's Failure back to them, so errors.Is
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
	// was started without executor.ActorOptions.Authority to verify it.
	ErrNoAuthority = errors.New("executor: the actor has no capability authority to verify the caller's token")
	// ErrNoCaller: a run without a caller was sent to an executor actor
	// that requires one (executor.ActorOptions.RequireCaller).
	ErrNoCaller = errors.New("executor: the run has no caller")
	// ErrStaleTool: the run asked for a content hash of its entry file
	// (RunRequest.Hash) that this executor's tool root does not hold: it
	// holds another version. The caller runs it elsewhere (its own node).
	ErrStaleTool = errors.New("executor: the tool here is another version than the caller's")

	// ErrNotCleared: a run placed from another node was refused by this
	// node's approval gate (executor.ActorOptions.AdmitRemote): its version
	// needs an approval this node has not recorded (approvals are kept per
	// node).
	// The placing node runs it itself, where its gate cleared it.
	ErrNotCleared = errors.New("executor: this node's approval gate did not clear the run")
	// ErrUnavailable: the executor actor did not answer in time (it may be
	// restarting or stopped); try again.
	ErrUnavailable = errors.New("executor: the executor actor did not answer")
	// ErrNoJournal: a Replay was sent to an executor actor started
	// without a journal (executor.ActorOptions.Journal): nothing was
	// recorded there to replay.
	ErrNoJournal = errors.New("executor: the actor has no journal to replay from")
	// ErrOverlay: a Run's overlay (RunRequest.Overlay) was refused: it came
	// from another node, named a path outside the staging directory
	// (tools/.forge/), or held a module over executor.MaxOverlayBytes.
	ErrOverlay = errors.New("executor: the run's in-memory modules were refused")
	// ErrProtocol: the actor answered with an unexpected message (a bug).
	ErrProtocol = errors.New("executor: unexpected reply")
)

// FailureCodes are the Failure codes of the executor actor's replies (see
// executor.proto) and the sentinel each names: the actor answers with
// them, the Client maps them back.
var FailureCodes = system.FailureCodes{
	{Code: "journal", Err: ErrJournal},
	{Code: "run_key_in_use", Err: ErrRunKeyInUse},
	{Code: "invalid_token", Err: capability.ErrInvalid},
	{Code: "revoked", Err: capability.ErrRevoked},
	{Code: "expired", Err: capability.ErrExpired},
	{Code: "no_authority", Err: ErrNoAuthority},
	{Code: "no_caller", Err: ErrNoCaller},
	{Code: "stale_tool", Err: ErrStaleTool},
	{Code: "not_cleared", Err: ErrNotCleared},
	{Code: system.CodeUnauthenticated, Err: system.ErrUnauthenticated},
	{Code: "denied", Err: capability.ErrDenied},
	{Code: "no_journal", Err: ErrNoJournal},
	{Code: "overlay", Err: ErrOverlay},
}

// Replayed is what a replay through the executor actor gave, compared with
// the recording: executor.ReplayReport without the recorded run itself
// (the caller knows it, by its id).
type Replayed struct {
	// Result is what the replay produced.
	Result Result
	// Patched says the replay ran a different source than the recorded one.
	Patched bool
	// Same says the replay's result (or error) equals the recorded one.
	Same bool
	// Divergence is the first point where the code asked for other I/O
	// than recorded; nil when it followed the recording.
	Divergence *journal.DivergenceError
	// Limits are the limits the replay ran under; LimitsNote says when
	// they are not simply the recorded ones.
	Limits     sandbox.Limits
	LimitsNote string
	// LimitHit is set when the replay stopped at one of its limits: that
	// is not a divergence.
	LimitHit string
	// FromTree are the modules read from the tool tree rather than the
	// recording; ModulesNote says so in words.
	FromTree    []string
	ModulesNote string
}
