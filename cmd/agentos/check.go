package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/internal/units"
)

// runCheck is check_tool from the terminal: agentos check [--root DIR] [--json] PATH.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print exactly one JSON object {valid, errors, warnings, risk, risks}")
	pos, err := parseFlags(fs, args)
	if err != nil {
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
	res := check.New(cfg.CheckOptions()).Check(rel, src)
	if *asJSON {
		if err := fprintJSON(stdout, res); err != nil {
			return err
		}
	} else {
		printCheck(stdout, rel, res)
	}
	if !res.Valid {
		return errFailed
	}
	return nil
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
		fmt.Fprintf(w, "  %s:%d:%d risk %s: %s\n", path, r.Line, r.Column, r.Level, r.Reason)
	}
}
