package main

import (
	"context"
	"fmt"
	"io"

	"github.com/agentos-run/agentos"
	"github.com/agentos-run/agentos/actors/executor"
)

// runRecover resumes the runs a crash left unfinished:
// agentos recover [--root DIR] [--json] [--run ID].
//
// With --run it resumes that one run, unfinished or quarantined, always in
// sandbox worker processes (whatever agentos.json says): a quarantined run's
// host died while it ran in-process, and it must never run in-process again.
func runRecover(ctx context.Context, args []string, stdout, _ io.Writer) error {
	c := newJournalCmd("recover", "print one JSON array of what became of each run")
	only := c.fs.String("run", "", "resume only this run (an id or unique prefix), in worker processes; a quarantined run is resumed only this way")
	_, absRoot, cfg, j, err := c.open(args, 0, "")
	if err != nil {
		return err
	}
	defer j.Close()
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
	var reports []agentos.RecoverReport
	if *only != "" {
		rep, err := agentos.RecoverRun(ctx, ex, j, *only)
		if err != nil {
			return err
		}
		reports = []agentos.RecoverReport{rep}
	} else if reports, err = agentos.Recover(ctx, ex, j); err != nil {
		return err
	}
	if *asJSON {
		if reports == nil {
			reports = []agentos.RecoverReport{}
		}
		return fprintJSON(stdout, reports)
	}
	if len(reports) == 0 {
		fmt.Fprintln(stdout, "no unfinished runs")
	}
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
	}
	return nil
}
