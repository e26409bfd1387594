package main

import (
	"context"
	"fmt"
	"io"

	"github.com/agentos-run/agentos"
	"github.com/agentos-run/agentos/actors/executor"
)

// runRecover resumes the runs a crash left unfinished:
// agentos recover [--root DIR] [--json].
func runRecover(ctx context.Context, args []string, stdout, _ io.Writer) error {
	c := newJournalCmd("recover", "print one JSON array of what became of each run")
	_, absRoot, cfg, j, err := c.open(args, 0, "")
	if err != nil {
		return err
	}
	defer j.Close()
	asJSON := c.asJSON
	ex, err := executor.New(cfg.ExecutorOptions(absRoot))
	if err != nil {
		return err
	}
	defer ex.Close()
	reports, err := agentos.Recover(ctx, ex, j)
	if err != nil {
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
			fmt.Fprintf(stdout, "resumed run %s (%s): failed: %s\n", r.Run.ID, r.Run.Tool, r.Result.Error.Message)
		case r.Reason != "":
			fmt.Fprintf(stdout, "run %s marked failed: %s\n", r.Run.ID, r.Reason)
		default:
			fmt.Fprintf(stdout, "run %s interrupted again; it stays resumable\n", r.Run.ID)
		}
	}
	return nil
}
