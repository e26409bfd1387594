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
}

// runRuns lists the journal's runs: agentos runs [--root DIR] [--json];
// agentos runs prune ... deletes old ones (see runPrune).
func runRuns(_ context.Context, args []string, stdout, _ io.Writer) error {
	if len(args) > 0 && args[0] == "prune" {
		return runPrune(args[1:], stdout)
	}
	c := newJournalCmd("runs", "print one JSON object {\"runs\": [...]}")
	_, _, _, j, err := c.open(args, 0, "")
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
		rows = append(rows, runsRow{RunMeta: r, DurationNS: r.Duration(), Calls: n})
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
	return tw.Flush()
}
