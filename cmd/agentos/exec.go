package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/agentos-run/agentos"
	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/journal"
)

// runExec is exec_tool from the terminal:
// agentos exec [--root DIR] [--json] [--timeout D] PATH [ARGS_JSON].
func runExec(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	root := fs.String("root", ".", "the tool root")
	asJSON := fs.Bool("json", false, "print exactly one JSON object {success, result, logs, error}")
	timeout := fs.Duration("timeout", 0, "wall-clock limit of the run (default: the tool root's, 5s)")
	inproc := fs.Bool("inprocess", false, "run in this process instead of a sandbox worker (trusted tools only)")
	jpath := fs.String("journal", "", "the journal file (default: <root>/.agentos/journal.db)")
	noJournal := fs.Bool("no-journal", false, "do not record the run")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		return usagef("expected PATH and optional ARGS_JSON, got %d arguments", len(pos))
	}
	argsJSON, err := argsObject(pos[1:], `{"n": 10}`)
	if err != nil {
		return err
	}
	absRoot, cfg, rel, err := rootedTool(*root, pos[0])
	if err != nil {
		return err
	}
	ex, stop, err := toolExecutor(absRoot, cfg, func(opts *executor.Options) {
		opts.Workers = 1
		if *inproc {
			opts.Isolation = executor.IsolationInProcess
		}
	})
	if err != nil {
		return err
	}
	defer stop()
	var j *journal.Journal
	if !*noJournal {
		if j, err = openJournal(absRoot, cfg, *jpath, false); err != nil {
			return err
		}
		defer j.Close()
	}
	res, runID, err := agentos.Exec(ctx, ex, j, executor.Request{Path: rel, Args: argsJSON, Limits: executor.Limits{Timeout: *timeout}})
	if err != nil {
		return err
	}
	if *asJSON {
		if err := fprintJSON(stdout, struct {
			executor.Result
			Run string `json:"run,omitempty"`
		}{res, runID}); err != nil {
			return err
		}
	} else {
		printExec(stdout, stderr, res)
		if runID != "" {
			fmt.Fprintf(stderr, "run %s recorded: replay it with 'agentos replay %s'\n", runID, runID)
		}
	}
	if !res.Success {
		return errFailed
	}
	return nil
}

func printExec(stdout, stderr io.Writer, res executor.Result) {
	for _, l := range res.Logs {
		fmt.Fprintf(stderr, "log: %s\n", l)
	}
	if res.Success {
		var v any
		if json.Unmarshal(res.Result, &v) == nil {
			fprintJSON(stdout, v)
		} else {
			fmt.Fprintln(stdout, string(res.Result))
		}
		return
	}
	fmt.Fprintf(stderr, "error (%s): %s\n", res.Error.Kind, res.Error.Message)
	if res.Error.Stack != "" {
		fmt.Fprintf(stderr, "%s\n", res.Error.Stack)
	}
	fmt.Fprintf(stderr, "(run took %v)\n", res.Duration.Round(time.Microsecond))
}
