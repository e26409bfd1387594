package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/transpile"
)

// Record runs req on ex and records the run in j: its metadata, the tool's
// source (by content hash) and every driver call. With a nil journal it runs
// live. It returns the result and the run id ("" when live).
//
// A run cancelled by its caller (shutdown) is left "running" so that
// recovery resumes it later; any other outcome ends the run.
func Record(ctx context.Context, ex *Executor, j *journal.Journal, req Request) (execclient.Result, string, error) {
	res, id, err, _ := record(ctx, ex, j, req)
	return res, id, err
}

// record is Record, also returning what a driver panicked with.
func record(ctx context.Context, ex *Executor, j *journal.Journal, req Request) (res execclient.Result, id string, err error, panicked any) {
	if j == nil {
		res, panicked = ex.exec(ctx, req)
		return res, "", nil, panicked
	}
	// tools/x.ts@<hash>: the recorded version, with the modules it ran with.
	if xerr := ResolveVersion(j, &req); xerr != nil {
		return execclient.Result{Success: false, Result: json.RawMessage("null"), Logs: []string{}, Error: xerr}, "", nil, nil
	}
	src, hash, err := req.Source, "", error(nil)
	if src != nil {
		hash = transpile.Hash(src) // the bytes the caller held the run to: no second read
	} else {
		src, hash, err = ex.Source(req.Path)
	}
	if err != nil {
		res, panicked = ex.exec(ctx, req) // the run reports the missing tool; there is nothing to record
		return res, "", nil, panicked
	}
	// IMPORTANT: run exactly the bytes that are journaled; reading the file
	// again could run a version written in between.
	req.Source = src
	if err := j.PutSource(hash, src); err != nil {
		return execclient.Result{}, "", fmt.Errorf("journaling the tool source: %w", err), nil
	}
	// IMPORTANT: the run's isolation is part of its start record: if the
	// host dies during an in-process run, the tool may be what killed it,
	// and recovery MUST NOT run it in-process again. So an in-process run
	// waits for its start to be committed (run.Committed) before the tool
	// starts, and the run is found and quarantined after the crash; a run
	// in a worker does not wait (a worker's death never takes the host).
	// IMPORTANT: the limits the run executes under are part of its record:
	// recovery and replay run it under the same ones.
	req.Limits = req.Limits.Or(ex.opts.Limits)
	// IMPORTANT: the run is pinned: every module it requires is journaled
	// (source by hash, path in its metadata) before it runs, so that replay
	// and recovery load exactly the code that ran.
	run, err := j.Begin(journal.RunMeta{Kind: "exec", Tool: req.Path, Hash: hash, Args: req.Args, Caller: req.Caller, Limits: JournalLimits(req.Limits), Host: journal.Host{Isolation: string(ex.opts.Isolation)},
		Pinned: true, Commit: ex.commit(), AtVersion: req.version != ""})
	if err != nil {
		return execclient.Result{}, "", fmt.Errorf("journaling the run: %w", err), nil
	}
	req.OnModule = chainModule(run.AddModule, req.OnModule)
	req.OnTrace = run.SetTraceID
	if ex.opts.Isolation == IsolationInProcess {
		if err := run.Committed(); err != nil {
			return execclient.Result{}, "", fmt.Errorf("journaling the run: %w", err), nil
		}
	}
	req.Middleware = append([]driver.Middleware{run.Middleware()}, req.Middleware...)
	// Under SyncEach and WriteEach a call is committed before the tool
	// sees its answer: no call is answered ahead of its record then.
	req.StreamLocal = !j.Durability().EachCommitted()
	res, panicked = ex.exec(ctx, req)
	res = cancelledUnder(ctx, res)
	if res.Error != nil && errors.Is(res.Error, ErrCancelled) {
		// The host stopped the run and lives on: resumable, and not
		// suspected of having harmed its host. (If this cannot be written,
		// recovery treats the run as one its host died under: the safe side.)
		_ = run.Interrupt("cancelled: " + res.Error.Message)
		return res, run.ID(), nil, panicked
	}
	return res, run.ID(), EndRun(run, res), panicked
}

// cancelledUnder reports, as cancelled, a run that failed after its
// caller's context ended. IMPORTANT: the host stopping a run changes what
// the run sees (its process's rights are revoked, its worker is stopped),
// so a failure from then on is the stop's doing, not the tool's: the run
// MUST stay resumable. A verdict about the tool itself (its time, memory,
// stack or output limit, a compile error, bad arguments) stands.
func cancelledUnder(ctx context.Context, res execclient.Result) execclient.Result {
	if res.Error == nil || ctx.Err() == nil {
		return res
	}
	switch res.Error.Kind {
	case ErrException.Kind, ErrSecurity.Kind, ErrCrash.Kind, ErrHostFailure.Kind, ErrUnsettled.Kind:
		e := *res.Error
		e.Kind = ErrCancelled.Kind
		e.Message = fmt.Sprintf("the run was cancelled by its caller (%v); it then failed: %s", context.Cause(ctx), res.Error.Message)
		res.Error = &e
	}
	return res
}

// EndRun closes a journaled run with res's outcome and logs (bounded by
// the journal: journal.MaxRunLogBytes).
func EndRun(run *journal.Run, res execclient.Result) error {
	run.SetLogs(res.Logs)
	status := journal.StatusOK
	var errJSON json.RawMessage
	if res.Error != nil {
		status = journal.StatusFailed
		errJSON, _ = json.Marshal(res.Error)
	}
	return run.End(status, res.Result, errJSON)
}

// chainModule calls first, then next (when set), for each module.
func chainModule(first, next func(journal.Module, []byte) error) func(journal.Module, []byte) error {
	if next == nil {
		return first
	}
	return func(m journal.Module, src []byte) error {
		if err := first(m, src); err != nil {
			return err
		}
		return next(m, src)
	}
}

// commit is the tool tree's Git commit (Options.Commit), "" when unknown.
func (e *Executor) commit() string {
	if e.opts.Commit == nil {
		return ""
	}
	c, err := e.opts.Commit()
	if err != nil {
		return ""
	}
	return c
}
