package agentos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/vfs"
)

// JournalFile is where a tool root's journal lives by default.
var JournalFile = filepath.Join(StateDir, "journal.db")

// QuotaFile is where a tool root keeps quota use across runtimes: what the
// node and each named process with a quota spent of tool_calls, llm_tokens
// and cost_usd (see capability.FileLedger). A runtime holds it open while
// it runs.
var QuotaFile = filepath.Join(StateDir, "quota.db")

// Exec runs req on ex and records the run in j: its metadata, the tool's
// source (by content hash) and every driver call. With a nil journal it runs
// live. It returns the result and the run id ("" when live).
//
// A run cancelled by its caller (shutdown) is left "running" so that
// Recover resumes it later; any other outcome ends the run.
func Exec(ctx context.Context, ex *executor.Executor, j *journal.Journal, req executor.Request) (executor.Result, string, error) {
	return executor.Record(ctx, ex, j, req)
}

// ReplayReport compares a replayed run with its recording.
type ReplayReport struct {
	// Run is the recorded run.
	Run journal.RunMeta `json:"run"`
	// Result is what the replay produced.
	Result executor.Result `json:"result"`
	// Patched says the replay ran a different source than the recorded one.
	Patched bool `json:"patched"`
	// Same says the replay's result (or error kind) equals the recorded one.
	Same bool `json:"same"`
	// Divergence is the first point where the code asked for other I/O
	// than recorded; nil when it followed the recording.
	Divergence *journal.DivergenceError `json:"divergence,omitempty"`
}

// Replay re-executes run id offline: every driver call is answered from the
// journal and no device is touched. patched, when not nil, is a new version
// of the tool fed the recorded I/O (how a user debugs a bad tool); otherwise
// the recorded source is run, even if the file changed since.
func Replay(ctx context.Context, ex *executor.Executor, j *journal.Journal, id string, patched []byte) (ReplayReport, error) {
	rep, err := j.Replayer(id)
	if err != nil {
		return ReplayReport{}, err
	}
	meta := rep.Meta()
	src := patched
	if src == nil {
		if src, err = j.Source(meta.Hash); err != nil {
			return ReplayReport{}, fmt.Errorf("run %s cannot be replayed: %w", meta.ID, err)
		}
	}
	res := ex.Exec(ctx, executor.Request{Path: meta.Tool, Args: meta.Args, Source: src, Middleware: []driver.Middleware{rep.Middleware()}})
	r := ReplayReport{Run: meta, Result: res, Patched: patched != nil, Divergence: rep.Finish()}
	// The recorded result was scrubbed of the run's secrets: compare the
	// replayed one scrubbed the same way.
	scrubbed := res
	if res.Success {
		scrubbed.Result = rep.Redact(res.Result)
	} else if b, err := json.Marshal(res.Error); err == nil {
		var e executor.Error
		if json.Unmarshal(rep.Redact(b), &e) == nil {
			scrubbed.Error = &e
		}
	}
	r.Same = sameOutcome(meta, scrubbed)
	return r, nil
}

// sameOutcome compares a result with a recorded run's: equal JSON results,
// or failures of the same kind.
func sameOutcome(meta journal.RunMeta, res executor.Result) bool {
	if (meta.Status == journal.StatusOK) != res.Success {
		return false
	}
	if res.Success {
		return jsonEqual(meta.Result, res.Result)
	}
	var rec executor.Error
	if json.Unmarshal(meta.Error, &rec) != nil {
		return false
	}
	return rec.Kind == res.Error.Kind && rec.Message == res.Error.Message
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// RecoverReport says what became of one unfinished run.
type RecoverReport struct {
	Run     journal.RunMeta `json:"run"`
	Resumed bool            `json:"resumed"`
	Result  executor.Result `json:"result,omitzero"`
	// Quarantined says the run is set aside (Reason says why): its host
	// died while it ran in-process. Resume it with RecoverRun in process
	// isolation ('agentos recover --run ID').
	Quarantined bool `json:"quarantined,omitempty"`
	// Reason says why a run could not be resumed (it was marked failed) or
	// why it is quarantined.
	Reason string `json:"reason,omitempty"`
}

// Errors of RecoverRun.
var (
	// ErrQuarantined: the run crashed its host (or its host died under it)
	// while it ran in-process; it is resumed only in process isolation.
	ErrQuarantined = errors.New("agentos: the run is quarantined")
	// ErrNotResumable: the run is not unfinished (it ended, or is not a
	// tool run).
	ErrNotResumable = errors.New("agentos: the run cannot be resumed")
)

// Recover finds the tool runs ("exec") a crash left unfinished and resumes
// each (forge runs are left to the forge): the recorded prefix of its calls
// is answered from the journal (nothing is paid for twice), the run's /tmp
// is rebuilt from its recorded writes, then the run continues live and is
// appended to. A run whose tool changed or vanished since is marked failed
// with the reason: none is dropped silently. Runs are resumed concurrently
// (as many at once as the executor has workers), so that runs which each
// end at their timeout do not add up.
//
// IMPORTANT: a run that was executing in-process when its host died is
// never re-run blindly: the tool may be what killed the host (a Go stack
// overflow or an out-of-memory error is fatal, and would kill every start
// that re-ran it). It is quarantined with the reason, reported with
// Quarantined, and resumed only on request, in process isolation
// (RecoverRun). A run its host cancelled (a shutdown) is resumed as usual.
// Runs quarantined earlier are reported again, until they are resumed.
func Recover(ctx context.Context, ex *executor.Executor, j *journal.Journal) ([]RecoverReport, error) {
	return recoverRuns(ctx, ex, j, nil)
}

// recoverRuns is Recover, leaving alone the runs skip selects (a serving
// node's runs in flight).
func recoverRuns(ctx context.Context, ex *executor.Executor, j *journal.Journal, skip func(journal.RunMeta) bool) ([]RecoverReport, error) {
	runs, err := j.Runs()
	if err != nil {
		return nil, err
	}
	var out []RecoverReport
	var resume []int // indexes in out of the runs to resume
	for _, meta := range runs {
		if meta.Kind != "exec" {
			continue // a forge run is resumed by the forge (Runtime does it at start)
		}
		if skip != nil && skip(meta) {
			continue
		}
		switch {
		case meta.Status == journal.StatusQuarantined:
			out = append(out, RecoverReport{Run: meta, Quarantined: true, Reason: meta.Quarantine})
			continue
		case meta.Status != journal.StatusRunning:
			continue
		}
		rep := RecoverReport{Run: meta}
		if reason := hostDied(meta); reason != "" {
			if err := j.Quarantine(meta.ID, reason); err != nil {
				return out, err
			}
			rep.Quarantined, rep.Reason = true, reason
			rep.Run.Status, rep.Run.Quarantine = journal.StatusQuarantined, reason
			out = append(out, rep)
			continue
		}
		if meta.Quarantine != "" && ex.Options().Isolation == executor.IsolationInProcess {
			// Resumed once in a worker, interrupted again: still never
			// in-process.
			if err := j.Quarantine(meta.ID, meta.Quarantine); err != nil {
				return out, err
			}
			rep.Quarantined, rep.Reason = true, meta.Quarantine
			out = append(out, rep)
			continue
		}
		if rep.Reason = unresumable(ex, j, meta); rep.Reason != "" {
			if err := j.MarkFailed(meta.ID, rep.Reason); err != nil {
				return out, err
			}
			out = append(out, rep)
			continue
		}
		out = append(out, rep)
		resume = append(resume, len(out)-1)
	}
	workers := ex.Options().Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	errs := make([]error, len(out))
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for _, i := range resume {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = resumeRun(ctx, ex, j, &out[i])
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// RecoverRun resumes one run on request: an unfinished or a quarantined
// one (id may be a unique prefix). A quarantined run, or one whose host
// died while it ran in-process, is resumed only by an executor in process
// isolation (ErrQuarantined otherwise): in a worker, whatever killed the
// host ends as a classified failure (stack_overflow, memory_limit, ...).
func RecoverRun(ctx context.Context, ex *executor.Executor, j *journal.Journal, id string) (RecoverReport, error) {
	meta, err := j.Get(id)
	if err != nil {
		return RecoverReport{}, err
	}
	rep := RecoverReport{Run: meta}
	switch {
	case meta.Kind != "exec":
		return rep, fmt.Errorf("%w: run %s is a %s run; only tool runs (exec) are resumed here (a forge resumes at start)", ErrNotResumable, meta.ID, meta.Kind)
	case meta.Status != journal.StatusRunning && meta.Status != journal.StatusQuarantined:
		return rep, fmt.Errorf("%w: run %s has ended (%s); replay it with 'agentos replay %s' instead", ErrNotResumable, meta.ID, meta.Status, meta.ID)
	}
	suspect := meta.Quarantine
	if suspect == "" {
		suspect = hostDied(meta)
	}
	if suspect != "" && ex.Options().Isolation != executor.IsolationProcess {
		if meta.Status == journal.StatusRunning {
			if err := j.Quarantine(meta.ID, suspect); err != nil {
				return rep, err
			}
		}
		return rep, fmt.Errorf("%w: run %s: %s; it is resumed only in process isolation ('agentos recover --run %s' uses worker processes)", ErrQuarantined, meta.ID, suspect, meta.ID)
	}
	if rep.Reason = unresumable(ex, j, meta); rep.Reason != "" {
		return rep, j.MarkFailed(meta.ID, rep.Reason)
	}
	if suspect != "" {
		rep.Run.Quarantine = suspect
	}
	return rep, resumeRun(ctx, ex, j, &rep)
}

// hostDied returns why an unfinished run must be quarantined: its host
// died while it ran in-process ("" when it need not be).
func hostDied(meta journal.RunMeta) string {
	if meta.Status != journal.StatusRunning || meta.Isolation != string(executor.IsolationInProcess) || meta.Interrupted != "" {
		return ""
	}
	host := fmt.Sprintf("its host process (pid %d) died", meta.PID)
	switch {
	case meta.PID == 0:
		host = "its host process died"
	case meta.Current():
		host = "it never ended and was not cancelled (its runtime in this process stopped under it)"
	}
	return fmt.Sprintf("%s while the run was executing in-process, and the tool may be what killed it (in-process, a Go stack overflow or out-of-memory error is fatal to the host); it is not run again automatically: resume it in a worker process with 'agentos recover --run %s'", host, meta.ID)
}

// unresumable returns why run meta cannot be resumed ("" when it can).
func unresumable(ex *executor.Executor, j *journal.Journal, meta journal.RunMeta) string {
	_, hash, serr := ex.Source(meta.Tool)
	usedSQL := false
	if entries, err := j.Entries(meta.ID); err == nil {
		for _, e := range entries {
			usedSQL = usedSQL || e.Driver == driver.SQLDriver
		}
	}
	switch {
	case usedSQL:
		// Its transaction died with the process: replaying the recorded
		// statements would skip writes the database never kept.
		return fmt.Sprintf("cannot resume: the run used SQL, and the crash rolled back its transaction; run %s again", meta.Tool)
	case serr != nil:
		return fmt.Sprintf("cannot resume: the tool %s is gone (%v)", meta.Tool, serr)
	case meta.ArgsRedacted:
		// Resuming would run the tool with [REDACTED] in place of its
		// credentials, silently: refuse, clearly.
		return fmt.Sprintf("cannot resume: its arguments carried credentials, which the journal does not keep; run %s again (pass credentials as named secrets, not arguments)", meta.Tool)
	case hash != meta.Hash:
		return fmt.Sprintf("cannot resume: the tool %s changed since the run started (content hash %.12s, now %.12s); replay it with 'agentos replay %s --tool %s' instead", meta.Tool, meta.Hash, hash, meta.ID, meta.Tool)
	}
	return ""
}

// resumeRun resumes the run rep describes and fills in its result: the
// recorded prefix is answered from the journal, the /tmp writes in it are
// performed again (the run's /tmp died with its host), the rest runs live.
func resumeRun(ctx context.Context, ex *executor.Executor, j *journal.Journal, rep *RecoverReport) error {
	meta := rep.Run
	src, _, err := ex.Source(meta.Tool)
	if err != nil {
		return err
	}
	rec, err := j.Recover(meta.ID)
	if err != nil {
		return err
	}
	rec.Redo = redoTmpWrite
	// IMPORTANT: committed before the tool runs again: should this host
	// die during the resumed run, the next start knows where it ran.
	if err := rec.Run().Rehost(string(ex.Options().Isolation)); err != nil {
		return err
	}
	req := executor.Request{Path: meta.Tool, Args: meta.Args, Source: src, Middleware: []driver.Middleware{rec.Middleware()}}
	if meta.Caller != nil {
		// IMPORTANT: the resumed run holds exactly the rights its caller
		// held, as the original run did; only a run no process made (the
		// operator's) runs without a caller restriction.
		rights, checks := kernel.CallerRights(*meta.Caller)
		req.Rights, req.Caller = rights, meta.Caller
		req.Middleware = append(req.Middleware, checks)
	}
	rep.Result = ex.Exec(ctx, req)
	if rep.Result.Error != nil && errors.Is(rep.Result.Error, executor.ErrCancelled) {
		_ = rec.Run().Interrupt("cancelled: " + rep.Result.Error.Message) // interrupted again: still resumable
		return nil
	}
	rep.Resumed = true
	rep.Quarantined = false
	return executor.EndRun(rec.Run(), rep.Result)
}

// redoTmpWrite says which recorded calls a resumed run performs again: its
// successful writes under /tmp, the per-run scratch directory that died with
// the crashed host. Writes anywhere else were kept by the filesystem.
func redoTmpWrite(c driver.Call) bool {
	if c.Driver != driver.FSDriver || c.Op != "write_file" {
		return false
	}
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(c.Request, &a) != nil {
		return false
	}
	return a.Path == vfs.TmpMount || strings.HasPrefix(a.Path, vfs.TmpMount+"/")
}
