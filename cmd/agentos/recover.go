package main

import (
	"context"
	"fmt"
	"io"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/node/admin"
)

// runRecover resumes the runs a crash left unfinished:
// agentos recover [--root DIR] [--json] [--run ID] [--timeout D].
//
// Each run resumes under the limits it was recorded with; --timeout
// overrides the recorded timeout. It exits 1 when a resumed run failed or a
// run could not be resumed.
//
// With --run it resumes that one run, unfinished or quarantined, always in
// sandbox worker processes (whatever agentos.json says): a quarantined run's
// host died while it ran in-process, and it must never run in-process again.
func runRecover(ctx context.Context, args []string, stdout, _ io.Writer) error {
	c := newJournalCmd("recover", "print one JSON object {\"recovered\": [...]}: what became of each run")
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
	defer j.Close()
	ropts := executor.RecoverOptions{Limits: executor.Limits{Timeout: *timeout}}
	asJSON := c.asJSON
	ex, stop, err := toolExecutor(absRoot, cfg, func(opts *executor.Options) {
		if *only != "" {
			opts.Isolation = executor.IsolationProcess
		}
	})
	if err != nil {
		return err
	}
	defer stop()
	var reports []executor.RecoverReport
	if *only != "" {
		rep, err := executor.RecoverRunWith(ctx, ex, j, *only, ropts)
		if err != nil {
			return err
		}
		reports = []executor.RecoverReport{rep}
	} else if reports, err = executor.RecoverWith(ctx, ex, j, ropts); err != nil {
		return err
	}
	if *asJSON {
		if reports == nil {
			reports = []executor.RecoverReport{}
		}
		if err := fprintJSON(stdout, map[string][]executor.RecoverReport{"recovered": reports}); err != nil {
			return err
		}
		return recoverStatus(reports)
	}
	if len(reports) == 0 {
		fmt.Fprintln(stdout, "no unfinished runs")
	}
	printRecovered(stdout, reports)
	return recoverStatus(reports)
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
