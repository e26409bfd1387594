package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/journal"
)

// runRecover resumes the runs a crash left unfinished:
// agentos recover [--root DIR] [--json] [--run ID] [--timeout D].
//
// IMPORTANT: it lists every run 'agentos runs' shows interrupted: tool runs
// and forges are resumed (a forge with the configured model, its recorded
// answers replayed first; stderr says so before), the others (an agent's
// run) are listed with what resumes them.
//
// Each run resumes under the limits it was recorded with; --timeout
// overrides the recorded timeout. It exits 1 when a resumed run failed or a
// run could not be resumed.
//
// With --run it resumes that one run, unfinished or quarantined, always in
// sandbox worker processes (whatever agentos.json says): a quarantined run's
// host died while it ran in-process, and it must never run in-process again.
func runRecover(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newJournalCmd("recover", "print one JSON object {\"recovered\": [...], \"forges\": [...], \"left\": [...]}: what became of each tool run, each forge, and the interrupted runs left alone")
	only := c.fs.String("run", "", "resume only this run (an id or unique prefix), in worker processes; a quarantined run is resumed only this way")
	timeout := durationFlag(c.fs, "timeout", "wall-clock limit `D` of each resumed run, e.g. 90s or 90 (seconds); it MUST be positive (default: the one recorded with the run)")
	_, absRoot, cfg, err := c.parse(args, 0, "")
	if err != nil {
		return err
	}
	if nc, err := nodeFor(absRoot, cfg, *c.jpath); err != nil {
		return err
	} else if nc != nil { // the node holds the journal: it resumes the runs
		defer nc.Close()
		return recoverOnNode(ctx, nc, admin.RecoverRequest{Run: *only, Timeout: *timeout}, *c.asJSON, stdout)
	}
	j, err := openJournal(absRoot, cfg, *c.jpath, true)
	if err != nil {
		return err
	}
	out, err := recoverExecs(ctx, absRoot, cfg, j, *only, executor.RecoverOptions{Limits: executor.Limits{Timeout: *timeout}})
	j.Close() // the forges' runtime opens it again
	if err != nil {
		return err
	}
	if out.forge != "" || (*only == "" && len(out.forges) > 0) {
		if out.Forges, err = recoverForges(ctx, absRoot, cfg, *c.jpath, out.forge, stderr); err != nil {
			return err
		}
	}
	if *c.asJSON {
		if err := fprintJSON(stdout, out); err != nil {
			return err
		}
		return out.status()
	}
	out.print(stdout)
	return out.status()
}

// recoverOutput is what 'agentos recover' did: the tool runs it resumed
// (or quarantined, or marked failed), the forges it resumed, and the
// interrupted runs of other kinds it left, with the reason.
type recoverOutput struct {
	Recovered []executor.RecoverReport `json:"recovered"`
	Forges    []host.ForgeReport       `json:"forges"`
	Left      []host.LeftRun           `json:"left"`

	forges []journal.RunMeta // the interrupted forges
	forge  string            // --run named this forge
}

// status is errFailed (exit 1) when a run failed (recoverStatus) or a
// resumed forge failed.
func (o recoverOutput) status() error {
	for _, f := range o.Forges {
		if f.Err != "" {
			return errFailed
		}
	}
	return recoverStatus(o.Recovered)
}

// print says what recover did: each resumed tool run and forge, and the
// interrupted runs left alone.
func (o recoverOutput) print(stdout io.Writer) {
	if len(o.Recovered) == 0 && len(o.Forges) == 0 && len(o.Left) == 0 {
		fmt.Fprintln(stdout, "no unfinished runs")
	}
	printRecovered(stdout, o.Recovered)
	printForges(stdout, o.Forges)
	printLeft(stdout, o.Left)
}

// recoverExecs lists the interrupted runs of journal j and resumes its
// tool runs (only the run only, when set) with a tool executor, as the
// runtime does at start.
func recoverExecs(ctx context.Context, absRoot string, cfg host.Config, j *journal.Journal, only string, ropts executor.RecoverOptions) (out recoverOutput, err error) {
	out = recoverOutput{Recovered: []executor.RecoverReport{}, Forges: []host.ForgeReport{}, Left: []host.LeftRun{}}
	var left []host.LeftRun
	if _, out.forges, left, err = host.InterruptedRuns(j); err != nil {
		return out, err
	}
	if only == "" {
		out.Left = nonNilSlice(left)
	} else if out.forge, err = forgeNamed(j, only); err != nil || out.forge != "" {
		return out, err // a forge is resumed by a runtime: recoverForges
	}
	ex, stop, err := toolExecutor(absRoot, cfg, func(opts *executor.Options) {
		if only != "" {
			opts.Isolation = executor.IsolationProcess
		}
	})
	if err != nil {
		return out, err
	}
	defer stop()
	if only != "" {
		rep, err := executor.RecoverRunWith(ctx, ex, j, only, ropts)
		if err != nil {
			return out, err
		}
		out.Recovered = []executor.RecoverReport{rep}
		return out, nil
	}
	reports, err := executor.RecoverWith(ctx, ex, j, ropts)
	if reports != nil {
		out.Recovered = reports
	}
	return out, err
}

// forgeNamed looks up the run --run names: the id of a forge (which a
// runtime resumes, not the tool executor), or "" for another run. An
// unknown or ambiguous id is a usage error (exit 2, as trace, replay and
// persona show do).
func forgeNamed(j *journal.Journal, id string) (string, error) {
	meta, err := j.Get(id)
	if errors.Is(err, journal.ErrNoRun) || errors.Is(err, journal.ErrAmbiguous) {
		return "", usagef("%v", err)
	}
	if err != nil || meta.Kind != forge.Kind {
		return "", err
	}
	return meta.ID, nil
}

// recoverForges starts a runtime on the root and resumes its interrupted
// forges (only forge id, when set) with the configured model, saying so
// on stderr first: a resumed forge sends model requests.
func recoverForges(ctx context.Context, absRoot string, cfg host.Config, jpath, id string, stderr io.Writer) ([]host.ForgeReport, error) {
	if jpath != "" {
		rel, err := journalInRoot(absRoot, jpath)
		if err != nil {
			return nil, err
		}
		cfg.Journal = rel
	}
	cfg.Root, cfg.Logger = absRoot, cmdLogger(ctx)
	rt, err := host.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	what := "the interrupted forges"
	if id != "" {
		what = "forge run " + id
	}
	fmt.Fprintf(stderr, "resuming %s: recorded model answers are replayed, then each goes on with the configured model\n", what)
	return rt.RecoverForges(ctx, id)
}

// journalInRoot is --journal jpath relative to the tool root: a runtime
// on the root records in a journal inside it only.
func journalInRoot(absRoot, jpath string) (string, error) {
	abs, err := filepath.Abs(jpath)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(absRoot, abs)
	if err != nil || !filepath.IsLocal(rel) {
		return "", usagef("forges are resumed by a runtime on the tool root, which records in the root's journal: --journal %s is outside %s", jpath, absRoot)
	}
	return filepath.ToSlash(rel), nil
}

// printForges prints what became of each resumed forge, one line each.
func printForges(stdout io.Writer, reports []host.ForgeReport) {
	for _, r := range reports {
		if r.Err != "" {
			fmt.Fprintf(stdout, "resumed forge run %s: failed: %s\n", r.Run, r.Err)
			continue
		}
		fmt.Fprintf(stdout, "resumed forge run %s: ok, %s after %d attempts\n", r.Run, r.Result.Path, len(r.Result.Attempts))
	}
}

// printLeft prints the interrupted runs recover leaves alone, with why.
func printLeft(stdout io.Writer, left []host.LeftRun) {
	for _, l := range left {
		fmt.Fprintf(stdout, "run %s (%s) interrupted, left as it is: %s\n", l.Run.ID, l.Run.Kind, l.Reason)
	}
}

// printRecovered prints what became of each run, one line each.
func printRecovered(stdout io.Writer, reports []executor.RecoverReport) {
	for _, r := range reports {
		switch {
		case r.Resumed && r.Result.Success:
			fmt.Fprintf(stdout, "resumed run %s (%s): ok %s\n", r.Run.ID, r.Run.Tool, clip(string(r.Result.Result), 200))
		case r.Resumed:
			fmt.Fprintf(stdout, "resumed run %s (%s): failed: %s: %s\n", r.Run.ID, r.Run.Tool, r.Result.Error.Kind, r.Result.Error.Message)
		case r.Quarantined:
			fmt.Fprintf(stdout, "run %s (%s) quarantined: %s\n", r.Run.ID, r.Run.Tool, r.Reason)
		case r.Reason != "":
			fmt.Fprintf(stdout, "run %s marked failed: %s\n", r.Run.ID, r.Reason)
		default:
			fmt.Fprintf(stdout, "run %s interrupted again; it stays resumable\n", r.Run.ID)
		}
		if r.LimitsNote != "" {
			fmt.Fprintf(stdout, "  limits: %s\n", r.LimitsNote)
		}
		if r.ModulesNote != "" {
			fmt.Fprintf(stdout, "  modules: %s\n", r.ModulesNote)
		}
	}
}

// recoverStatus is errFailed (exit 1) when a resumed run failed or a run
// could not be resumed: IMPORTANT: recover MUST NOT exit 0 for a run whose
// resumed execution failed.
func recoverStatus(reports []executor.RecoverReport) error {
	for _, r := range reports {
		if r.Failed() {
			return errFailed
		}
	}
	return nil
}
