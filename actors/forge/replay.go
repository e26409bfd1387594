package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/actors/forge/forgerun"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/pii"
)

// ReplayOptions configure Replay. Checker is required; the rest are the
// node's forge settings (the ones the run was made under, unless the
// replay is meant to try others).
type ReplayOptions struct {
	// Checker judges every recorded candidate again (REQUIRED): check_tool
	// is code, not I/O, so a replay always runs today's checker (with
	// today's allowed_imports). A verdict it changes shows as a divergence.
	Checker *check.Checker
	// MaxAttempts bounds the loop as Options.MaxAttempts (0: 3). Fewer
	// attempts than the run made, or more than a run that gave up made,
	// diverge.
	MaxAttempts int
	// ModelRetries is Options.ModelRetries: a recorded transient model
	// error is asked again (from the journal) as the run did.
	ModelRetries int
	// LessonsLimit is Options.LessonsLimit: a run that recalled lessons
	// asked for at most this many (the request is compared).
	LessonsLimit int
	// PII is the tool root's tokenizer, as the run's: the model requests
	// are tokenized above the journal, so the replay MUST tokenize them
	// alike to compare them (nil: none).
	PII *pii.Tokenizer
	// Logger receives the attempts' progress (nil: slog.Default()).
	Logger *slog.Logger
}

// ReplayReport compares a replayed forge run with its recording.
type ReplayReport struct {
	// Run is the recorded run.
	Run journal.RunMeta `json:"run"`
	// Recorded is the run's recorded result (its attempts, the tool it
	// kept) and RecordedError its error ("" when it passed).
	Recorded      Result `json:"recorded"`
	RecordedError string `json:"recorded_error,omitempty"`
	// Result is what the replayed loop produced (nothing is written: no
	// Commit, no Gate) and Error its error ("" when it passed).
	Result Result `json:"result"`
	Error  string `json:"error,omitempty"`
	// Same says the replay kept the same tool with the same attempts
	// (paths, verdicts and errors) as the recording, or failed alike.
	Same bool `json:"same"`
	// Divergence is the first call the loop made otherwise than recorded
	// (nil when it followed the recording): a changed prompt or model
	// request (AGENTOS-J001), a test run the recording never made because
	// the checker now passes a candidate it refused (AGENTOS-J001 or
	// J002), or recorded calls never made because it now refuses one, or
	// the loop stopped earlier (AGENTOS-J003).
	Divergence *journal.DivergenceError `json:"divergence,omitempty"`
}

// Replay runs forge run id again offline, from j: the loop of the
// recorded run, with every model answer, lesson recall, path check and
// test run answered from the journal. IMPORTANT: it sends no model request,
// runs no test, searches and writes nothing (no registry, no Git, no tool
// root): the only live code is the loop itself, its prompt and today's
// checker (opts.Checker). A call not in the journal, or whose request
// differs from the recorded one, is the divergence reported.
//
// It fails (no report) when the run is not a forge run, records no spec,
// or is still running.
func Replay(ctx context.Context, j *journal.Journal, id string, opts ReplayOptions) (ReplayReport, error) {
	if opts.Checker == nil {
		return ReplayReport{}, fmt.Errorf("%w: replaying a forge needs a checker", ErrOptions)
	}
	rep, err := j.Replayer(id)
	if err != nil {
		return ReplayReport{}, err
	}
	meta := rep.Meta()
	if meta.Kind != Kind {
		return ReplayReport{}, fmt.Errorf("%w: run %s is of kind %s, not a forge", ErrSpec, meta.ID, meta.Kind)
	}
	spec, ok := forgerun.SpecOf(meta)
	if !ok {
		return ReplayReport{}, fmt.Errorf("%w: run %s has no spec to replay", ErrSpec, meta.ID)
	}
	if meta.Status != journal.StatusOK && meta.Status != journal.StatusFailed {
		return ReplayReport{}, fmt.Errorf("%w: forge run %s has not ended (interrupted or still running): nothing to compare with; resume it with agentos recover --run %s, or read it with agentos trace %s", ErrSpec, meta.ID, meta.ID, meta.ID)
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 3
	}
	if opts.ModelRetries < 0 {
		opts.ModelRetries = 0
	} else if opts.ModelRetries == 0 {
		opts.ModelRetries = defaultModelRetries
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	f := &Forge{offline: true, opts: Options{Checker: opts.Checker, MaxAttempts: opts.MaxAttempts, ModelRetries: opts.ModelRetries, PII: opts.PII, Logger: opts.Logger, LessonsLimit: opts.LessonsLimit}}
	// As Resume: the model requests tokenized above the journal, which
	// answers every call and never reaches the device below it.
	host := driver.Chain(offlineHost(meta.ID), opts.PII.ModelMiddleware(), rep.Middleware())
	res, lerr := f.loop(ctx, host, spec, recordedLessonAgents(meta), nil, nil)
	if ctx.Err() != nil {
		return ReplayReport{}, ctx.Err()
	}
	r := ReplayReport{Run: meta, Result: res, Divergence: rep.Finish()}
	r.Result.RunID = meta.ID
	if lerr != nil {
		r.Error = lerr.Error()
	}
	if len(meta.Result) > 0 {
		_ = json.Unmarshal(meta.Result, &r.Recorded)
	}
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(meta.Error, &e) == nil {
		r.RecordedError = e.Message
	}
	r.Same = r.Divergence == nil && sameForge(meta, r.Recorded, res, lerr)
	return r, nil
}

// recordedLessonAgents are the memories the run recalled lessons from, as
// resume reads them (nil: it recalled none).
func recordedLessonAgents(meta journal.RunMeta) []string {
	asked, _ := forgerun.ArgsOf(meta)
	if !asked.Lessons {
		return nil
	}
	if len(asked.LessonAgents) == 0 {
		return lessonAgents(nil, true) // recorded before lesson_agents was saved
	}
	return asked.LessonAgents
}

// offlineHost is the device below a replay's journal: the journal answers
// every call, so reaching it is a bug; it says so rather than run anything.
func offlineHost(id string) driver.Host {
	return driver.HostFunc(func(_ context.Context, c driver.Call) (json.RawMessage, error) {
		return nil, driver.Errorf(driver.CodeAbort, "replay of forge run %s is offline: call #%d (%s.%s) reached a device", id, c.Seq, c.Driver, c.Op)
	})
}

// sameForge compares a replayed loop's outcome with the recorded run's:
// both passed with the same tool, or both failed, after the same attempts.
func sameForge(meta journal.RunMeta, rec, res Result, err error) bool {
	if (meta.Status == journal.StatusOK) != (err == nil) {
		return false
	}
	if rec.Path != res.Path || len(rec.Attempts) != len(res.Attempts) {
		return false
	}
	for i, a := range rec.Attempts {
		b := res.Attempts[i]
		if a.N != b.N || a.Path != b.Path || a.Passed != b.Passed || len(a.Errors) != len(b.Errors) {
			return false
		}
		for k := range a.Errors {
			if a.Errors[k] != b.Errors[k] {
				return false
			}
		}
	}
	return true
}
