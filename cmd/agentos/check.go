package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/governance/gate"
	"github.com/agentos-run/agentos/internal/units"
	"github.com/agentos-run/agentos/kerneltools"
	"github.com/agentos-run/agentos/vfs"
)

// runCheck is check_tool from the terminal:
// agentos check [--root DIR] [--json] [--against-runs [N]] PATH.
//
// With --against-runs it also replays, offline, the N (default
// governance.gate.runs, else 5) most recent recorded runs of the previous
// version of the tool against the file as it is now (the registration
// gate, without writing), and fails when one of them changed.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print exactly one JSON object {valid, errors, warnings, risk, risks} (with --against-runs also gate: the replay report)")
	var against againstRunsFlag
	fs.Var(&against, "against-runs", "also replay the `N` (default: governance.gate.runs, else 5) most recent recorded runs of the tool's previous version against this file, offline, and report same / different / divergence for each (--against-runs, --against-runs=N or --against-runs N PATH)")
	jpath := fs.String("journal", "", "with --against-runs: the journal file (default: <root>/.agentos/journal.db)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if pos, err = against.takeCount(pos); err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("expected one PATH, got %d arguments", len(pos))
	}
	absRoot, cfg, rel, err := syncedTool(ctx, "check", *root, pos[0], false, stderr)
	if err != nil {
		return err
	}
	src, err := os.ReadFile(filepath.Join(absRoot, filepath.FromSlash(rel)))
	if err != nil {
		return usagef("cannot read %s: %v", rel, err)
	}
	checker := check.New(cfg.CheckOptions())
	res, err := withModules(checker, absRoot, cfg.Tools(), rel, src)
	if err != nil {
		return err
	}
	var rep *gate.Report
	if against.on && res.Valid {
		r, err := checkAgainstRuns(ctx, absRoot, cfg, *jpath, rel, src, against.n)
		if err != nil {
			return err
		}
		rep = &r
	}
	if *asJSON {
		out := struct {
			check.Result
			Gate *gate.Report `json:"gate,omitempty"`
		}{res, rep}
		if err := fprintJSON(stdout, out); err != nil {
			return err
		}
	} else {
		printCheck(stdout, rel, res)
		printGateOf(stdout, rep, against.on)
	}
	if !res.Valid || (rep != nil && len(rep.Changed()) > 0) {
		return errFailed
	}
	return nil
}

// printGateOf prints the replay report of --against-runs (on), or says
// that the gate did not run because the check failed (rep nil).
func printGateOf(stdout io.Writer, rep *gate.Report, on bool) {
	if rep != nil {
		printGate(stdout, *rep)
	} else if on {
		fmt.Fprintln(stdout, "gate: not run: the tool does not pass the check")
	}
}

func printCheck(w io.Writer, path string, res check.Result) {
	status := "valid"
	if !res.Valid {
		status = "invalid (" + units.Plural(len(res.Errors), "error", "errors") + ")"
	}
	fmt.Fprintf(w, "%s: %s, risk %s\n", path, status, res.Risk)
	for _, f := range res.Errors {
		fmt.Fprintf(w, "  %s:%s\n", path, f)
	}
	for _, f := range res.Warnings {
		fmt.Fprintf(w, "  %s:%s (warning)\n", path, f)
	}
	for _, r := range res.Risks {
		at := path
		if r.Module != "" {
			at = r.Module + " (required)"
		}
		fmt.Fprintf(w, "  %s:%d:%d risk %s: %s\n", at, r.Line, r.Column, r.Level, r.Reason)
	}
}

// withModules is check_tool's result for the tool rel (source src) in the
// tool root absRoot, rated by the modules it requires too (node.Judge, as
// the approval gate judges it): the risk the gate will hold it at.
func withModules(checker *check.Checker, absRoot, tools, rel string, src []byte) (check.Result, error) {
	res := checker.Check(rel, src)
	if !gate.IsTool(rel) || !strings.HasPrefix(rel, tools+"/") {
		return res, nil
	}
	jail, err := vfs.Open(absRoot)
	if err != nil {
		return res, err
	}
	defer jail.Close()
	risk := func(p string, b []byte, _ string) kerneltools.Rating {
		return kerneltools.RatingOf(checker.Check(p, b))
	}
	j, err := kerneltools.Judge(jail, tools, rel, src, nil, nil, risk)
	if err != nil {
		return res, fmt.Errorf("check: %s: the modules it requires cannot be rated: %w", rel, err)
	}
	return kerneltools.WithModules(res, j), nil
}
