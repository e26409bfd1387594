package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/journal"
)

// runExec is exec_tool from the terminal:
// agentos exec [--root DIR] [--json] [--timeout D] PATH [ARGS_JSON].
func runExec(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print exactly one JSON object {success, result, logs, error, run}")
	timeout := durationFlag(fs, "timeout", "wall-clock limit `D` of the run, e.g. 30s, 2m or 10 (seconds); it MUST be positive (default: the tool root's limits.timeout, 5s)")
	inproc := fs.Bool("inprocess", false, "run in this process instead of a sandbox worker (trusted tools only)")
	jpath := fs.String("journal", "", "record the run in the journal file `PATH` (default: <root>/.agentos/journal.db)")
	noJournal := fs.Bool("no-journal", false, "do not record the run (exec then also runs outside a tool root)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		return usagef("expected PATH and optional ARGS_JSON, got %d arguments", len(pos))
	}
	absRoot, cfg, rel, err := execTool(ctx, *root, pos[0], *noJournal, *jpath, stderr)
	if err != nil {
		return err
	}
	argsJSON, err := argsObject(pos[1:], `{"n": 10}`, cfg.MaxArgs())
	if err != nil {
		return err
	}
	var j *journal.Journal
	if !*noJournal { // a node serving the root runs it; another command's journal is waited for
		nc, jj, err := execJournal(ctx, absRoot, cfg, *jpath, *timeout, stderr)
		if err != nil {
			return err
		}
		if nc != nil {
			defer nc.Close()
			if *inproc {
				return usagef("a node serves this tool root and holds its journal: it runs tools with its own isolation; drop --inprocess to run on the node, or pass --no-journal to run in this process unrecorded")
			}
			return execOnNode(ctx, nc, rel, argsJSON, *timeout, *asJSON, stdout, stderr)
		}
		j = jj
		defer j.Close()
	}
	res, runID, err := execHere(ctx, absRoot, cfg, j, executor.Request{Path: rel, Args: argsJSON, Limits: executor.Limits{Timeout: *timeout}}, *inproc)
	if err != nil {
		return err
	}
	return reportExec(stdout, stderr, *asJSON, res, runID)
}

// execTool finds the tool exec runs. PATH@HASH runs a recorded version,
// kept in the journal: the file itself may have changed or be gone (so it
// needs the journal). A PATH is synced first, and recorded unless
// noJournal or another journal file is given.
func execTool(ctx context.Context, root, arg string, noJournal bool, jpath string, stderr io.Writer) (absRoot string, cfg host.Config, rel string, err error) {
	toolArg, version, versioned := executor.SplitVersion(arg)
	if !versioned {
		return syncedTool(ctx, "exec", root, toolArg, !noJournal && jpath == "", stderr)
	}
	if noJournal {
		return "", host.Config{}, "", usagef("%s names a recorded version, and versions are kept in the journal: drop --no-journal", arg)
	}
	return versionedTool(root, toolArg, version)
}

// execHere runs req in this process's executor (one worker: a sandbox, or
// this process when inproc), recorded in j when it is not nil.
func execHere(ctx context.Context, absRoot string, cfg host.Config, j *journal.Journal, req executor.Request, inproc bool) (execclient.Result, string, error) {
	ex, stop, err := toolExecutor(absRoot, cfg, func(opts *executor.Options) {
		opts.Workers = 1
		if inproc {
			opts.Isolation = executor.IsolationInProcess
		}
	})
	if err != nil {
		return execclient.Result{}, "", err
	}
	defer stop()
	return executor.Record(ctx, ex, j, req)
}

// reportExec prints a run's outcome as 'agentos exec' does, wherever it
// ran; a failed run is errFailed (exit status 1).
func reportExec(stdout, stderr io.Writer, asJSON bool, res execclient.Result, runID string) error {
	if asJSON {
		if err := fprintJSON(stdout, struct {
			execclient.Result
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

func printExec(stdout, stderr io.Writer, res execclient.Result) {
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

// versionedTool is syncedTool for PATH@HASH: the tool root, and the path
// (relative to it) with its version; the file need not exist.
func versionedTool(root, p, version string) (absRoot string, cfg host.Config, rel string, err error) {
	if absRoot, cfg, err = openDir(root, true); err != nil {
		return "", cfg, "", err
	}
	abs := p
	if !filepath.IsAbs(p) {
		abs = filepath.Join(absRoot, p)
	}
	r, err := filepath.Rel(absRoot, abs)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", cfg, "", usagef("%s is outside the tool root %s: pass --root DIR", p, absRoot)
	}
	return absRoot, cfg, filepath.ToSlash(r) + "@" + version, nil
}
