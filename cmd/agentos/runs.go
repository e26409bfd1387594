package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/agentos-run/agentos/journal"
)

// runsRow is one run as `agentos runs --json` prints it.
type runsRow struct {
	journal.RunMeta
	DurationNS time.Duration `json:"duration_ns"`
	Calls      int           `json:"calls"`
	// Resume is the command that resumes an interrupted (or quarantined)
	// run.
	Resume string `json:"resume,omitempty"`
}

// newRunsRow is run r as 'agentos runs' shows it. IMPORTANT: a run left
// "running" by a host that is gone (killed, crashed) is shown
// "interrupted", with the command that resumes it; only a run a live
// process executes shows "running".
func newRunsRow(r journal.RunMeta, calls int) runsRow {
	row := runsRow{RunMeta: r, DurationNS: r.Duration(), Calls: calls, Resume: r.ResumeCommand()}
	row.Status = r.Shown()
	return row
}

// runRuns lists the journal's runs: agentos runs [--root DIR] [--json];
// agentos runs prune ... deletes old ones (see runPrune).
func runRuns(ctx context.Context, args []string, stdout, _ io.Writer) error {
	if len(args) > 0 && args[0] == "prune" {
		return runPrune(args[1:], stdout)
	}
	c := newJournalCmd("runs", "print one JSON object {\"runs\": [...]}")
	j, err := c.openRuns(ctx, args) // through the node when one serves the root
	if err != nil {
		return err
	}
	defer j.Close()
	asJSON := c.asJSON
	runs, err := j.Runs()
	if err != nil {
		return err
	}
	rows := make([]runsRow, 0, len(runs))
	for _, r := range runs {
		n, err := j.Count(r.ID)
		if err != nil {
			return err
		}
		rows = append(rows, newRunsRow(r, n))
	}
	if *asJSON {
		return fprintJSON(stdout, map[string][]runsRow{"runs": rows})
	}
	if len(rows) == 0 {
		fmt.Fprintln(stdout, "no runs recorded yet: 'agentos exec' records every run")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tTOOL\tSTATUS\tDURATION\tCALLS")
	for _, r := range rows {
		dur := "-"
		if r.DurationNS > 0 {
			dur = r.DurationNS.Round(10 * time.Microsecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", r.ID, r.Kind, r.Tool, r.Status, dur, r.Calls)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if r.Resume != "" {
			fmt.Fprintf(stdout, "run %s is %s: resume it with '%s'\n", r.ID, r.Status, r.Resume)
		}
	}
	return nil
}
