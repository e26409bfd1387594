package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/agentos-run/agentos"
	"github.com/agentos-run/agentos/actors/executor"
)

// runReplay re-executes a run offline:
// agentos replay [--root DIR] [--json] [--tool PATCHED.ts] RUN.
func runReplay(ctx context.Context, args []string, stdout, _ io.Writer) error {
	c := newJournalCmd("replay", "print one JSON object {run, result, patched, same, divergence}")
	tool := c.fs.String("tool", "", "a patched version of the tool to feed the recorded I/O")
	pos, absRoot, cfg, j, err := c.open(args, 1, "one RUN id (or a unique prefix)")
	if err != nil {
		return err
	}
	defer j.Close()
	asJSON := c.asJSON
	var patched []byte
	if *tool != "" {
		if patched, err = os.ReadFile(*tool); err != nil {
			return usagef("cannot read the patched tool: %v", err)
		}
	}
	ex, stop, err := toolExecutor(absRoot, cfg, func(opts *executor.Options) { opts.Workers = 1 })
	if err != nil {
		return err
	}
	defer stop()
	rep, err := agentos.Replay(ctx, ex, j, pos[0], patched)
	if err != nil {
		return usagef("%v", err)
	}
	failed := rep.Divergence != nil || (!rep.Patched && !rep.Same)
	if *asJSON {
		if err := fprintJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		printReplay(stdout, rep)
	}
	if failed {
		return errFailed
	}
	return nil
}

func printReplay(w io.Writer, rep agentos.ReplayReport) {
	what := "the recorded tool"
	if rep.Patched {
		what = "the patched tool"
	}
	fmt.Fprintf(w, "replayed run %s (%s) offline with %s\n", rep.Run.ID, rep.Run.Tool, what)
	recorded := string(rep.Run.Result)
	if rep.Run.Status != "ok" {
		recorded = "failed: " + string(rep.Run.Error)
	}
	fmt.Fprintf(w, "  recorded  %s\n", clip(recorded, 400))
	if rep.Result.Success {
		fmt.Fprintf(w, "  replayed  %s\n", clip(string(rep.Result.Result), 400))
	} else {
		fmt.Fprintf(w, "  replayed  failed: %s: %s\n", rep.Result.Error.Kind, clip(rep.Result.Error.Message, 300))
	}
	if d := rep.Divergence; d != nil {
		fmt.Fprintf(w, "DIVERGED %s\n", d.Error())
		return
	}
	switch {
	case rep.Same:
		fmt.Fprintln(w, "same result as recorded")
	case rep.Patched:
		fmt.Fprintln(w, "the patched tool followed the recorded I/O exactly and gave a different result")
	default:
		fmt.Fprintln(w, "the result differs from the recorded one")
	}
}
