package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/vfs"
)

// RecoverReport says what became of one unfinished run.
type RecoverReport struct {
	Run journal.RunMeta `json:"run"`
	// Outcome is what became of the run, one of the Outcome* values.
	// IMPORTANT: Resumed alone does not say the run succeeded: a resumed
	// run may fail (Result.Error says how); Failed reports both.
	Outcome string            `json:"outcome"`
	Resumed bool              `json:"resumed"`
	Result  execclient.Result `json:"result,omitzero"`
	// Limits are the limits a resumed run ran under (its recorded ones,
	// with RecoverOptions.Limits over them); LimitsNote says when they
	// are not simply the recorded ones.
	Limits     Limits `json:"limits,omitzero"`
	LimitsNote string `json:"limits_note,omitempty"`
	// Quarantined says the run is set aside (Reason says why): its host
	// died while it ran in-process. Resume it with RecoverRun in process
	// isolation ('agentos recover --run ID').
	Quarantined bool `json:"quarantined,omitempty"`
	// Reason says why a run could not be resumed (it was marked failed) or
	// why it is quarantined.
	Reason string `json:"reason,omitempty"`
	// FromTree are the modules the resumed run required that it had not
	// recorded before the crash, read from the tool tree as it is now
	// (journaled with the run from then on); ModulesNote says so in
	// words. Every module the run had recorded ran its recorded version.
	FromTree    []string `json:"from_tree,omitempty"`
	ModulesNote string   `json:"modules_note,omitempty"`
}

// What became of an unfinished run (RecoverReport.Outcome).
const (
	// OutcomeOK: resumed, and it ended successfully.
	OutcomeOK = "resumed"
	// OutcomeFailed: resumed, and the resumed execution failed
	// (Result.Error says how, e.g. a timeout).
	OutcomeFailed = "resumed_failed"
	// OutcomeNotResumed: it could not be resumed (Reason says why) and
	// was marked failed.
	OutcomeNotResumed = "not_resumed"
	// OutcomeQuarantined: set aside (Reason says why); resume it with
	// 'agentos recover --run ID'.
	OutcomeQuarantined = "quarantined"
	// OutcomeInterrupted: resumed, then cancelled again (a shutdown); it
	// stays resumable.
	OutcomeInterrupted = "interrupted"
)

// Failed reports whether the run ended failed during this recovery: it was
// resumed and its execution failed, or it could not be resumed.
func (r RecoverReport) Failed() bool {
	return r.Outcome == OutcomeFailed || r.Outcome == OutcomeNotResumed
}

// Summary says in a few words what became of the run: "resumed" (it ended
// ok), "resumed and failed: timeout: ...", "quarantined: ...", ...
func (r RecoverReport) Summary() string {
	switch r.Outcome {
	case OutcomeOK:
		return "resumed"
	case OutcomeFailed:
		return fmt.Sprintf("resumed and failed: %s: %s", r.Result.Error.Kind, r.Result.Error.Message)
	case OutcomeQuarantined:
		return "quarantined: " + r.Reason
	case OutcomeNotResumed:
		return "not resumed, marked failed: " + r.Reason
	}
	return "interrupted again; it stays resumable"
}

// setOutcome fills in r.Outcome from the rest of the report.
func (r *RecoverReport) setOutcome() {
	switch {
	case r.Quarantined:
		r.Outcome = OutcomeQuarantined
	case r.Resumed && r.Result.Success:
		r.Outcome = OutcomeOK
	case r.Resumed:
		r.Outcome = OutcomeFailed
	case r.Reason != "":
		r.Outcome = OutcomeNotResumed
	default:
		r.Outcome = OutcomeInterrupted
	}
}

// RecoverOptions adjust RecoverWith and RecoverRunWith. The zero value
// resumes every run under its recorded limits.
type RecoverOptions struct {
	// Limits override each run's recorded limits field by field (zero
	// fields keep the recorded ones), e.g. a longer timeout.
	Limits Limits

	// Skip, when set, leaves alone the runs it selects (RecoverWith only):
	// a serving node skips its runs in flight, which are not unfinished
	// but running.
	Skip func(journal.RunMeta) bool
}

// Recover finds the tool runs ("exec") a crash left unfinished and resumes
// each (forge runs are left to the forge): the recorded prefix of its calls
// is answered from the journal (nothing is paid for twice), the run's /tmp
// is rebuilt from its recorded writes, then the run continues live and is
// appended to. IMPORTANT: a pinned run (journal.RunMeta.Pinned) resumes
// with the code it started with, its entry and every module it had
// required, loaded from the journal whatever the tree holds now; a module
// it first requires after the crash point is read from the tree and
// journaled with it (RecoverReport.FromTree). A run recorded before
// agentos pinned modules resumes from the tree, and is marked failed with
// the reason when its tool changed or vanished since: none is dropped
// silently. Runs are resumed concurrently
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
//
// IMPORTANT: a run is resumed under the limits it was recorded with (its
// timeout, memory, output and call-depth limits; see RecoverWith to
// override them), and each report's Outcome says what became of it: a
// resumed run may still fail.
func Recover(ctx context.Context, ex *Executor, j *journal.Journal) ([]RecoverReport, error) {
	return RecoverWith(ctx, ex, j, RecoverOptions{})
}

// RecoverWith is Recover with options.
func RecoverWith(ctx context.Context, ex *Executor, j *journal.Journal, opts RecoverOptions) ([]RecoverReport, error) {
	out, err := recoverAll(ctx, ex, j, opts)
	for i := range out {
		out[i].setOutcome()
	}
	return out, err
}

func recoverAll(ctx context.Context, ex *Executor, j *journal.Journal, opts RecoverOptions) ([]RecoverReport, error) {
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
		if opts.Skip != nil && opts.Skip(meta) {
			continue
		}
		switch {
		case meta.Status == journal.StatusQuarantined:
			out = append(out, RecoverReport{Run: meta, Quarantined: true, Reason: meta.Quarantine})
			continue
		case meta.Status != journal.StatusRunning:
			continue
		}
		// IMPORTANT: on a journal nodes share, a run another live node
		// holds is in flight there: left alone, neither resumed nor
		// quarantined. Winning the claim makes the run this node's.
		if ok, err := j.Claim(meta.ID, j.Owner(), 0); errors.Is(err, journal.ErrEnded) {
			continue // another node ended it since it was listed
		} else if err != nil {
			return out, err
		} else if !ok {
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
		if meta.Quarantine != "" && ex.Options().Isolation == IsolationInProcess {
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
			errs[i] = resumeRun(ctx, ex, j, &out[i], opts)
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
//
// The run is resumed under its recorded limits (RecoverRunWith overrides
// them).
func RecoverRun(ctx context.Context, ex *Executor, j *journal.Journal, id string) (RecoverReport, error) {
	return RecoverRunWith(ctx, ex, j, id, RecoverOptions{})
}

// RecoverRunWith is RecoverRun with options.
func RecoverRunWith(ctx context.Context, ex *Executor, j *journal.Journal, id string, opts RecoverOptions) (RecoverReport, error) {
	rep, err := recoverOne(ctx, ex, j, id, opts)
	rep.setOutcome()
	return rep, err
}

func recoverOne(ctx context.Context, ex *Executor, j *journal.Journal, id string, opts RecoverOptions) (RecoverReport, error) {
	meta, err := j.Get(id)
	if err != nil {
		return RecoverReport{}, err
	}
	rep := RecoverReport{Run: meta}
	switch {
	case meta.Kind != "exec":
		return rep, fmt.Errorf("%w: run %s is of kind %s; only tool runs (exec) are resumed here (a forge resumes at start)", ErrNotResumable, meta.ID, meta.Kind)
	case meta.Status != journal.StatusRunning && meta.Status != journal.StatusQuarantined:
		return rep, fmt.Errorf("%w: run %s has ended (%s); replay it with 'agentos replay %s' instead", ErrNotResumable, meta.ID, meta.Status, meta.ID)
	}
	if ok, err := j.Claim(meta.ID, j.Owner(), 0); err != nil {
		return rep, err
	} else if !ok {
		return rep, fmt.Errorf("%w: run %s is in flight on another node (%s); it becomes resumable here once that node stops renewing its claim (it died)", journal.ErrClaimed, meta.ID, meta.Owner)
	}
	suspect := meta.Quarantine
	if suspect == "" {
		suspect = hostDied(meta)
	}
	if suspect != "" && ex.Options().Isolation != IsolationProcess {
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
	return rep, resumeRun(ctx, ex, j, &rep, opts)
}

// hostDied returns why an unfinished run must be quarantined: its host
// died while it ran in-process ("" when it need not be).
func hostDied(meta journal.RunMeta) string {
	if meta.Status != journal.StatusRunning || meta.Isolation != string(IsolationInProcess) || meta.Interrupted != "" {
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
func unresumable(ex *Executor, j *journal.Journal, meta journal.RunMeta) string {
	_, hash, serr := ex.Source(meta.Tool)
	if meta.Pinned {
		// A pinned run resumes the version it started with, from the
		// journal, whatever the tree holds now.
		hash, serr = meta.Hash, nil
		if _, err := j.Source(meta.Hash); err != nil {
			serr = fmt.Errorf("its recorded version %.12s: %w", meta.Hash, err)
		}
	}
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
//
// IMPORTANT: the run resumes under the limits it was recorded with (opts
// over them): a run started with a 60 s timeout MUST NOT be cut at the
// default 5 s because it was resumed.
func resumeRun(ctx context.Context, ex *Executor, j *journal.Journal, rep *RecoverReport, opts RecoverOptions) error {
	meta := rep.Run
	// IMPORTANT: a pinned run resumes exactly the code that ran: its entry
	// and every module it required, from the journal. A run recorded
	// before agentos pinned modules resumes the tree's (unresumable
	// checked that its entry is unchanged).
	var src []byte
	var err error
	if meta.Pinned {
		src, err = j.Source(meta.Hash)
	} else {
		src, _, err = ex.Source(meta.Tool)
	}
	if err != nil {
		return err
	}
	rec, err := j.Recover(meta.ID)
	if err != nil {
		return err
	}
	rec.Redo = redoTmpWrite
	rep.Limits, rep.LimitsNote = runLimits(ex, meta, opts.Limits)
	rec.Run().SetLimits(JournalLimits(rep.Limits))
	// IMPORTANT: committed before the tool runs again: should this host
	// die during the resumed run, the next start knows where it ran.
	if err := rec.Run().Rehost(string(ex.Options().Isolation)); err != nil {
		return err
	}
	pins := runPins(j, meta)
	req := Request{Path: meta.Tool, Args: meta.Args, Source: src, Limits: rep.Limits, Middleware: []driver.Middleware{rec.Middleware()}, Replayed: true,
		Pins: pins, OnModule: rec.Run().AddModule, recording: rec.Replayer}
	if meta.Caller != nil {
		// IMPORTANT: the resumed run holds exactly the rights its caller
		// held, as the original run did; only a run no process made (the
		// operator's) runs without a caller restriction.
		rights, checks := CallerRights(*meta.Caller)
		req.Rights, req.Caller = rights, meta.Caller
		req.Middleware = append(req.Middleware, checks)
	}
	rep.Result = ex.Exec(ctx, req)
	rep.FromTree = pins.FromTree()
	if len(rep.FromTree) > 0 {
		rep.ModulesNote = fmt.Sprintf("%s had not been required before the run stopped: read from the tool tree as it is now, and journaled with the run", strings.Join(rep.FromTree, ", "))
	}
	if rep.Result.Error != nil && errors.Is(rep.Result.Error, ErrCancelled) {
		_ = rec.Run().Interrupt("cancelled: " + rep.Result.Error.Message) // interrupted again: still resumable
		return nil
	}
	rep.Resumed = true
	rep.Quarantined = false
	return EndRun(rec.Run(), rep.Result)
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
