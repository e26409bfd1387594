package host

import (
	"context"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/journal"
)

// The recording, replay and recovery of tool runs live in package executor,
// next to the runs they record (actors/executor/record.go, replay.go,
// recover.go). What follows is the same API under the names agentos has
// always offered; new code may call package executor directly.

// Exec runs req on ex and records the run in j: its metadata, the tool's
// source (by content hash) and every driver call. With a nil journal it runs
// live. It returns the result and the run id ("" when live). It is
// executor.Record.
//
// A run cancelled by its caller (shutdown) is left "running" so that
// Recover resumes it later; any other outcome ends the run.
func Exec(ctx context.Context, ex *executor.Executor, j *journal.Journal, req executor.Request) (executor.Result, string, error) {
	return executor.Record(ctx, ex, j, req)
}

// ReplayReport compares a replayed run with its recording (see
// executor.ReplayReport).
type ReplayReport = executor.ReplayReport

// ReplayOptions adjust ReplayWith (see executor.ReplayOptions).
type ReplayOptions = executor.ReplayOptions

// Replay re-executes run id offline, every driver call answered from the
// journal; patched, when not nil, is a new version of the tool fed the
// recorded I/O. It is executor.Replay.
func Replay(ctx context.Context, ex *executor.Executor, j *journal.Journal, id string, patched []byte) (ReplayReport, error) {
	return executor.Replay(ctx, ex, j, id, patched)
}

// ReplayWith is Replay with options. It is executor.ReplayWith.
func ReplayWith(ctx context.Context, ex *executor.Executor, j *journal.Journal, id string, opts ReplayOptions) (ReplayReport, error) {
	return executor.ReplayWith(ctx, ex, j, id, opts)
}

// ForgeReplayReport compares a replayed forge run with its recording (see
// forge.ReplayReport).
type ForgeReplayReport = forge.ReplayReport

// ForgeReplayOptions are the settings a forge of the tool root at root
// runs under, for forge.Replay (what agentos replay uses): today's
// checker (allowed_imports), llm.forge_attempts and llm.retries,
// memory.recall_lessons, and the root's PII tokenizer. The caller MUST
// call closePII when the replay is over.
func (c Config) ForgeReplayOptions(root string) (opts forge.ReplayOptions, closePII func(), err error) {
	tok, m, err := c.OpenPII(root)
	if err != nil {
		return forge.ReplayOptions{}, nil, err
	}
	closePII = func() {}
	if m != nil {
		closePII = func() { _ = m.Close() }
	}
	return forge.ReplayOptions{
		Checker: check.New(c.CheckOptions()), MaxAttempts: c.LLM.ForgeAttempts, ModelRetries: c.LLM.forgeRetries(),
		LessonsLimit: c.Memory.lessons(), PII: tok,
	}, closePII, nil
}

// ReplayForge replays forge run id offline: zero model requests, zero test
// runs, nothing written. It is forge.Replay (see docs/REPLAY.md).
func ReplayForge(ctx context.Context, j *journal.Journal, id string, opts forge.ReplayOptions) (ForgeReplayReport, error) {
	return forge.Replay(ctx, j, id, opts)
}

// RecoverReport says what became of one unfinished run (see
// executor.RecoverReport).
type RecoverReport = executor.RecoverReport

// What became of an unfinished run (RecoverReport.Outcome); see
// executor.OutcomeOK and the others.
const (
	OutcomeOK          = executor.OutcomeOK
	OutcomeFailed      = executor.OutcomeFailed
	OutcomeNotResumed  = executor.OutcomeNotResumed
	OutcomeQuarantined = executor.OutcomeQuarantined
	OutcomeInterrupted = executor.OutcomeInterrupted
)

// RecoverOptions adjust RecoverWith and RecoverRunWith. The zero value
// resumes every run under its recorded limits.
type RecoverOptions struct {
	// Limits override each run's recorded limits field by field (zero
	// fields keep the recorded ones), e.g. a longer timeout.
	Limits executor.Limits

	// skip leaves alone the runs it selects (a serving node's runs in
	// flight).
	skip func(journal.RunMeta) bool
}

func (o RecoverOptions) executor() executor.RecoverOptions {
	return executor.RecoverOptions{Limits: o.Limits, Skip: o.skip}
}

// Errors of RecoverRun: errors.Is matches them (they are the executor's).
var (
	// ErrQuarantined: the run crashed its host (or its host died under it)
	// while it ran in-process; it is resumed only in process isolation.
	ErrQuarantined = executor.ErrQuarantined
	// ErrNotResumable: the run is not unfinished (it ended, or is not a
	// tool run).
	ErrNotResumable = executor.ErrNotResumable
)

// Recover resumes the tool runs a crash left unfinished, under their
// recorded limits and their callers' rights, and quarantines those whose
// host died while they ran in-process. It is executor.Recover, which
// documents it in full.
func Recover(ctx context.Context, ex *executor.Executor, j *journal.Journal) ([]RecoverReport, error) {
	return executor.Recover(ctx, ex, j)
}

// RecoverWith is Recover with options. It is executor.RecoverWith.
func RecoverWith(ctx context.Context, ex *executor.Executor, j *journal.Journal, opts RecoverOptions) ([]RecoverReport, error) {
	return executor.RecoverWith(ctx, ex, j, opts.executor())
}

// RecoverRun resumes one unfinished or quarantined run on request (id may
// be a unique prefix); a quarantined one only in process isolation. It is
// executor.RecoverRun.
func RecoverRun(ctx context.Context, ex *executor.Executor, j *journal.Journal, id string) (RecoverReport, error) {
	return executor.RecoverRun(ctx, ex, j, id)
}

// RecoverRunWith is RecoverRun with options. It is executor.RecoverRunWith.
func RecoverRunWith(ctx context.Context, ex *executor.Executor, j *journal.Journal, id string, opts RecoverOptions) (RecoverReport, error) {
	return executor.RecoverRunWith(ctx, ex, j, id, opts.executor())
}
