package main

import (
	"context"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"
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
	c := newJournalCmd("runs", "print one JSON object {\"runs\": [...]} (with --tool, also \"versions\": [...])")
	tool := c.fs.String("tool", "", "list only the runs of the tool at `PATH` (e.g. tools/x.ts), with the version each ran, and the versions the journal keeps (run one with 'agentos exec PATH@HASH')")
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
	if *tool != "" {
		return printToolRuns(j, runs, toolArg(*tool), *asJSON, stdout)
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

// toolArg is a --tool path as runs record it: root-relative, slashes,
// cleaned (./tools/x.ts is tools/x.ts).
func toolArg(p string) string {
	return path.Clean(filepath.ToSlash(strings.TrimPrefix(p, "./")))
}

// printToolRuns is 'agentos runs --tool PATH': the runs of one tool (as
// their entry), each with the version it ran, then the versions the
// journal keeps, newest first.
func printToolRuns(j runSource, all []journal.RunMeta, tool string, asJSON bool, stdout io.Writer) error {
	rows := []runsRow{}
	for _, r := range all {
		if r.Tool != tool {
			continue
		}
		n, err := j.Count(r.ID)
		if err != nil {
			return err
		}
		rows = append(rows, newRunsRow(r, n))
	}
	versions := journal.VersionsOf(all, tool)
	if versions == nil {
		versions = []journal.Version{}
	}
	if asJSON {
		return fprintJSON(stdout, struct {
			Runs     []runsRow         `json:"runs"`
			Versions []journal.Version `json:"versions"`
		}{rows, versions})
	}
	if len(rows) == 0 && len(versions) == 0 {
		fmt.Fprintf(stdout, "no runs of %s recorded (paths are relative to the tool root, e.g. tools/x.ts)\n", tool)
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tVERSION\tSTATUS\tDURATION\tCALLS\tMODULES")
	for _, r := range rows {
		dur := "-"
		if r.DurationNS > 0 {
			dur = r.DurationNS.Round(10 * time.Microsecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", r.ID, short(r.Hash), r.Status, dur, r.Calls, modulesCell(r.RunMeta))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nversions of %s, newest first (run one with 'agentos exec %s@HASH'):\n", tool, tool)
	tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tRUNS\tREQUIRED BY\tLAST\tLAST RUN\tCOMMIT")
	for _, v := range versions {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", short(v.Hash), v.Runs, v.Required, v.Last.Local().Format(time.DateTime), v.LastRun, orDash(short(v.Commit)))
	}
	return tw.Flush()
}

// short is a hash's first 12 digits.
func short(h string) string { return h[:min(len(h), 12)] }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// modulesCell lists a run's modules with their versions (path@hash), or
// says the run predates module pinning.
func modulesCell(r journal.RunMeta) string {
	if !r.Pinned {
		return "(not recorded)"
	}
	if len(r.Modules) == 0 {
		return "-"
	}
	parts := make([]string, len(r.Modules))
	for i, m := range r.Modules {
		parts[i] = m.Path + "@" + m.Hash[:min(len(m.Hash), 8)]
	}
	return strings.Join(parts, " ")
}
