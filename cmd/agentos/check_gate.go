package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/governance/gate"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/transpile"
)

// againstRunsFlag is --against-runs: a switch that also takes a count
// (--against-runs=3); "--against-runs 3 PATH" is read by runCheck (a flag
// value cannot be optional in package flag).
type againstRunsFlag struct {
	on bool
	n  int
}

func (f *againstRunsFlag) String() string {
	if f == nil || !f.on {
		return "false"
	}
	return strconv.Itoa(f.n)
}

func (f *againstRunsFlag) Set(s string) error {
	switch s {
	case "true":
		f.on = true
		return nil
	case "false":
		f.on = false
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return fmt.Errorf("--against-runs takes a count of runs (a whole number above 0), not %q", s)
	}
	f.on, f.n = true, n
	return nil
}

func (f *againstRunsFlag) IsBoolFlag() bool { return true }

// takeCount reads the N of "--against-runs N PATH" from the arguments
// (the flag package cannot take an optional value) and returns the rest.
// A first argument that is not a number is the PATH, left in place.
func (f *againstRunsFlag) takeCount(pos []string) ([]string, error) {
	if !f.on || f.n != 0 || len(pos) != 2 {
		return pos, nil
	}
	n, err := strconv.Atoi(pos[0])
	if err != nil {
		return pos, nil
	}
	if n <= 0 {
		return nil, usagef("--against-runs takes a count of runs above 0, not %d", n)
	}
	f.n = n
	return pos[1:], nil
}

// checkAgainstRuns replays the recorded runs of the previous version of
// the tool rel (the newest version other than src's that the journal has
// runs of) against src, offline: the registration gate without a write.
// When a node serves the root its journal is held by it: the runs to
// replay are copied from it into a private journal first.
func checkAgainstRuns(ctx context.Context, absRoot string, cfg host.Config, jpath, rel string, src []byte, n int) (gate.Report, error) {
	opts := cfg.Governance.Gate.Options()
	if n > 0 {
		opts.Runs = n
	} else if !opts.Enabled() {
		opts.Runs = 0 // asked for explicitly: the default count
	}
	j, err := gateJournal(ctx, absRoot, cfg, jpath, rel, transpile.Hash(src), opts)
	if err != nil {
		return gate.Report{}, err
	}
	ex, stop, err := toolExecutor(absRoot, cfg, func(o *executor.Options) { o.Workers = 2 })
	if err != nil {
		if j != nil {
			j.Close()
		}
		return gate.Report{}, err
	}
	defer stop()
	if j != nil {
		defer j.Close()
	}
	g, stopGate, err := host.OpenGate(ex, j, opts, slog.New(slog.DiscardHandler))
	if err != nil {
		return gate.Report{}, usagef("%v", err)
	}
	defer stopGate()
	return g.CheckNewest(ctx, rel, src), nil
}

// gateJournal opens the journal the gate replays from: the root's, or,
// when a node serves the root, a private file holding copies of the runs
// the gate would replay. nil (and no error) when the root has no journal.
func gateJournal(ctx context.Context, absRoot string, cfg host.Config, jpath, rel, newHash string, opts gate.Options) (*journal.Journal, error) {
	nc, err := nodeFor(absRoot, cfg, jpath)
	if err != nil {
		return nil, err
	}
	if nc == nil {
		if jpath == "" && cfg.JournalPostgresDSNEnv == "" {
			if _, err := os.Stat(cfg.JournalPath(absRoot)); err != nil {
				return nil, nil // nothing was ever recorded here
			}
		}
		return openJournalToRead(absRoot, cfg, jpath) // the gate only reads and replays
	}
	defer nc.Close()
	var all []journal.RunMeta // oldest first
	src := &nodeRuns{ctx: ctx, c: nc}
	if err := src.EachRun(journal.RunQuery{Oldest: true}, func(m journal.RunMeta) error { all = append(all, m); return nil }); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "agentos-gate-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir) // the open journal keeps its unlinked file
	j, err := cfg.OpenJournal(absRoot, filepath.Join(dir, "journal.db"))
	if err != nil {
		return nil, err
	}
	prev, ok := gate.PreviousHash(all, rel, newHash)
	if !ok {
		return j, nil // empty: the report says there is nothing to replay
	}
	count := opts.Runs
	if count <= 0 {
		count = gate.DefaultRuns
	}
	runs, _, _ := gate.Select(all, rel, prev, count)
	for _, m := range runs {
		d, err := nc.Run(ctx, m.ID)
		if err == nil {
			err = j.Import(d)
		}
		if err != nil {
			j.Close()
			return nil, fmt.Errorf("copying run %s from the serving node: %w", m.ID, err)
		}
	}
	return j, nil
}

// printGate prints a gate report for a terminal.
func printGate(w io.Writer, rep gate.Report) {
	fmt.Fprintln(w, rep.Summary())
	if len(rep.Runs) == 0 {
		return
	}
	from := "previous version " + shortHash(rep.OldHash)
	if rep.Previous != "" {
		from += " (" + rep.Previous + ")"
	}
	fmt.Fprintf(w, "  %s -> new version %s\n", from, shortHash(rep.NewHash))
	for _, r := range rep.Runs {
		switch r.Outcome {
		case gate.OutcomeSame:
			fmt.Fprintf(w, "  same        %s  args %s -> %s\n", r.Run, clip(r.Args, 120), clip(r.New, 120))
		case gate.OutcomeDifferent:
			fmt.Fprintf(w, "  DIFFERENT   %s  args %s\n      old %s\n      new %s\n", r.Run, clip(r.Args, 120), clip(r.Old, 300), clip(r.New, 300))
		case gate.OutcomeDivergence:
			fmt.Fprintf(w, "  DIVERGENCE  %s  [%s] at call #%d\n      %s\n", r.Run, r.Code, r.Seq, clip(r.Detail, 400))
		default:
			fmt.Fprintf(w, "  ERROR       %s  %s\n", r.Run, clip(r.Detail, 300))
		}
	}
	if rep.Skipped > 0 {
		fmt.Fprintf(w, "  (%d run(s) skipped: their arguments were redacted)\n", rep.Skipped)
	}
	if changed := rep.Changed(); len(changed) > 0 {
		fmt.Fprintf(w, "  with governance.gate.policy %q a write of this version would be %s\n", rep.Policy, map[bool]string{true: "refused", false: "accepted with this report"}[rep.Blocked])
	}
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return strings.TrimSpace(h)
}
