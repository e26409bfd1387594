package agentos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/journal"
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
	// Reason says why a run could not be resumed (it was marked failed).
	Reason string `json:"reason,omitempty"`
}

// Recover finds the tool runs ("exec") a crash left unfinished and resumes
// each (forge runs are left to the forge): the
// recorded prefix of its calls is answered from the journal (nothing is paid
// for twice), then the run continues live and is appended to. A run whose
// tool changed or vanished since is marked failed with the reason: none is
// dropped silently.
func Recover(ctx context.Context, ex *executor.Executor, j *journal.Journal) ([]RecoverReport, error) {
	runs, err := j.Unfinished()
	if err != nil {
		return nil, err
	}
	var out []RecoverReport
	for _, meta := range runs {
		if meta.Kind != "exec" {
			continue // a forge run is resumed by the forge (Runtime does it at start)
		}
		rep := RecoverReport{Run: meta}
		src, hash, serr := ex.Source(meta.Tool)
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
			rep.Reason = fmt.Sprintf("cannot resume: the run used SQL, and the crash rolled back its transaction; run %s again", meta.Tool)
		case serr != nil:
			rep.Reason = fmt.Sprintf("cannot resume: the tool %s is gone (%v)", meta.Tool, serr)
		case meta.ArgsRedacted:
			// Resuming would run the tool with [REDACTED] in place of its
			// credentials, silently: refuse, clearly.
			rep.Reason = fmt.Sprintf("cannot resume: its arguments carried credentials, which the journal does not keep; run %s again (pass credentials as named secrets, not arguments)", meta.Tool)
		case hash != meta.Hash:
			rep.Reason = fmt.Sprintf("cannot resume: the tool %s changed since the run started (content hash %.12s, now %.12s); replay it with 'agentos replay %s --tool %s' instead", meta.Tool, meta.Hash, hash, meta.ID, meta.Tool)
		}
		if rep.Reason != "" {
			if err := j.MarkFailed(meta.ID, rep.Reason); err != nil {
				return out, err
			}
			out = append(out, rep)
			continue
		}
		rec, err := j.Recover(meta.ID)
		if err != nil {
			return out, err
		}
		rep.Result = ex.Exec(ctx, executor.Request{Path: meta.Tool, Args: meta.Args, Source: src, Middleware: []driver.Middleware{rec.Middleware()}})
		if rep.Result.Error != nil && errors.Is(rep.Result.Error, executor.ErrCancelled) {
			out = append(out, rep) // interrupted again: still resumable
			continue
		}
		rep.Resumed = true
		if err := executor.EndRun(rec.Run(), rep.Result); err != nil {
			return out, err
		}
		out = append(out, rep)
	}
	return out, nil
}
