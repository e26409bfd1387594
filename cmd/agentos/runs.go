package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
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

// newRunsRow is run r as 'agentos runs' shows it, with the count the
// listing read (r.Calls). IMPORTANT: a run left "running" by a host that
// is gone (killed, crashed) is shown "interrupted", with the command that
// resumes it; only a run a live process executes shows "running".
func newRunsRow(r journal.RunMeta) runsRow {
	row := runsRow{RunMeta: r, DurationNS: r.Duration(), Calls: r.Calls, Resume: r.ResumeCommand()}
	row.Status = r.Shown()
	row.Logs, row.LogsCut = nil, 0 // a listing names runs: agentos trace shows a run's logs
	return row
}

// defaultRunsLimit is how many runs 'agentos runs' shows without --limit:
// the newest ones, a screenful.
const defaultRunsLimit = 50

// runRuns lists the journal's runs: agentos runs [--root DIR] [--json]
// [--limit N] [--before ID | --after ID] [--tool PATH]; agentos runs prune
// ... deletes old ones (see runPrune). IMPORTANT: it reads only the runs it
// shows (a page, or with --limit 0 every run streamed in chunks): its time
// and memory do not grow with the journal.
func runRuns(ctx context.Context, args []string, stdout, _ io.Writer) error {
	if len(args) > 0 && args[0] == "prune" {
		return runPrune(args[1:], stdout)
	}
	c := newJournalCmd("runs", "print one JSON object {\"runs\": [...]}, oldest first, with \"before\" (or \"after\") naming the cursor of the next page when there is one (with --tool, also \"versions\": [...])")
	tool := c.fs.String("tool", "", "list only the runs of the tool at `PATH` (e.g. tools/x.ts), with the version each ran, and the versions the journal keeps (run one with 'agentos exec PATH@HASH')")
	limit := c.fs.Int("limit", defaultRunsLimit, "show at most `N` runs, the newest (with --after, the oldest after it); 0 shows every run")
	before := c.fs.String("before", "", "show the runs that started before the run `ID` (the next older page: the first run of a page)")
	after := c.fs.String("after", "", "show the runs that started after the run `ID`, oldest first (the next newer page)")
	j, err := c.openRuns(ctx, args) // through the node when one serves the root
	if err != nil {
		return err
	}
	defer j.Close()
	if err := checkRunsPaging(*limit, *before, *after, *tool); err != nil {
		return err
	}
	if *tool != "" {
		return printToolRuns(j, toolArg(*tool), *c.asJSON, stdout)
	}
	out := newRunsOutput(stdout, *c.asJSON)
	var next runsCursor
	if *limit == 0 {
		err = j.EachRun(journal.RunQuery{Oldest: true, After: *after}, func(m journal.RunMeta) error { return out.add(newRunsRow(m)) })
	} else {
		next, err = runsPage(j, *limit, *before, *after, out)
	}
	if errors.Is(err, journal.ErrNoRun) || errors.Is(err, journal.ErrAmbiguous) {
		return usagef("%v", err)
	}
	if err != nil {
		return err
	}
	return out.finish(next)
}

// checkRunsPaging refuses the combinations of --limit, --before, --after
// and --tool that name no one listing.
func checkRunsPaging(limit int, before, after, tool string) error {
	switch {
	case limit < 0:
		return usagef("--limit %d: give a number of runs, or 0 for every run", limit)
	case before != "" && after != "":
		return usagef("--before and --after: give one (--before pages back to older runs, --after forward to newer ones)")
	case before != "" && limit == 0:
		return usagef("--before with --limit 0: --before shows a page of the runs before a run; give --limit N, or list every run with --limit 0 alone")
	case tool != "" && (before != "" || after != ""):
		return usagef("--tool lists every run of the tool; --before and --after page the whole journal, not one tool's runs")
	}
	return nil
}

// runsCursor names the next page: the run before (older) or after (newer)
// which it starts; zero when the page was the last.
type runsCursor struct {
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
}

// runsPage shows one page of at most limit runs, oldest first: the newest
// runs (before the run before, if given), or the oldest after the run
// after. It reads limit+1 runs, to know whether another page follows.
func runsPage(j runSource, limit int, before, after string, out *runsOutput) (runsCursor, error) {
	q := journal.RunQuery{Before: before, After: after, Oldest: after != "", Limit: limit + 1}
	var page []journal.RunMeta
	if err := j.EachRun(q, func(m journal.RunMeta) error { page = append(page, m); return nil }); err != nil {
		return runsCursor{}, err
	}
	more := len(page) > limit
	page = page[:min(len(page), limit)]
	if !q.Oldest {
		slices.Reverse(page) // shown oldest first
	}
	var next runsCursor
	switch {
	case more && q.Oldest:
		next.After = page[len(page)-1].ID
	case more:
		next.Before = page[0].ID
	}
	for _, m := range page {
		if err := out.add(newRunsRow(m)); err != nil {
			return next, err
		}
	}
	return next, nil
}

// runsOutput writes the rows of 'agentos runs' as they come: a table
// (flushed every runsBlock rows, so that a listing of every run holds one
// block, not the journal) or a JSON object whose runs are streamed.
type runsOutput struct {
	w      io.Writer
	asJSON bool
	tw     *tabwriter.Writer
	rows   int
	resume []runsRow // the block's interrupted runs, said after it
}

// runsBlock is how many table rows are aligned together.
const runsBlock = 256

func newRunsOutput(w io.Writer, asJSON bool) *runsOutput {
	return &runsOutput{w: w, asJSON: asJSON}
}

func (o *runsOutput) add(r runsRow) error {
	o.rows++
	if o.asJSON {
		b, err := json.MarshalIndent(r, "    ", "  ")
		if err != nil {
			return fmt.Errorf("encoding JSON output: %w", err)
		}
		sep := ",\n    "
		if o.rows == 1 {
			sep = "{\n  \"runs\": [\n    "
		}
		_, err = fmt.Fprintf(o.w, "%s%s", sep, b)
		return err
	}
	if o.tw == nil {
		o.tw = tabwriter.NewWriter(o.w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(o.tw, "ID\tKIND\tTOOL\tSTATUS\tDURATION\tCALLS")
	}
	fmt.Fprintf(o.tw, "%s\t%s\t%s\t%s\t%s\t%d\n", r.ID, r.Kind, r.Tool, r.Status, durationCell(r.DurationNS), r.Calls)
	if r.Resume != "" {
		o.resume = append(o.resume, r)
	}
	if o.rows%runsBlock == 0 {
		return o.flush()
	}
	return nil
}

// flush ends a block of the table: its rows, then how to resume those
// that were interrupted.
func (o *runsOutput) flush() error {
	if o.tw == nil {
		return nil
	}
	if err := o.tw.Flush(); err != nil {
		return err
	}
	for _, r := range o.resume {
		fmt.Fprintf(o.w, "run %s is %s: resume it with '%s'\n", r.ID, r.Status, r.Resume)
	}
	o.resume = o.resume[:0]
	return nil
}

// finish ends the output, naming the next page when there is one.
func (o *runsOutput) finish(next runsCursor) error {
	if o.asJSON {
		head := "\n  ]"
		if o.rows == 0 {
			head = "{\n  \"runs\": []"
		}
		if next.Before != "" {
			head += fmt.Sprintf(",\n  \"before\": %q", next.Before)
		}
		if next.After != "" {
			head += fmt.Sprintf(",\n  \"after\": %q", next.After)
		}
		_, err := fmt.Fprint(o.w, head+"\n}\n")
		return err
	}
	if o.rows == 0 {
		fmt.Fprintln(o.w, "no runs recorded yet: 'agentos exec' records every run")
		return nil
	}
	if err := o.flush(); err != nil {
		return err
	}
	switch {
	case next.Before != "":
		fmt.Fprintf(o.w, "older runs: agentos runs --before %s (or --limit 0 for every run)\n", next.Before)
	case next.After != "":
		fmt.Fprintf(o.w, "newer runs: agentos runs --after %s\n", next.After)
	}
	return nil
}

// durationCell is a run's duration in the table ("-" while it runs).
func durationCell(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return d.Round(10 * time.Microsecond).String()
}

// toolArg is a --tool path as runs record it: root-relative, slashes,
// cleaned (./tools/x.ts is tools/x.ts).
func toolArg(p string) string {
	return path.Clean(filepath.ToSlash(strings.TrimPrefix(p, "./")))
}

// printToolRuns is 'agentos runs --tool PATH': the runs of one tool (as
// their entry), each with the version it ran, then the versions the
// journal keeps, newest first. It reads them from the journal's index of
// runs by tool, or, through a serving node (whose socket has no tool
// query), reads every run once, keeping only those of the tool or
// requiring it.
func printToolRuns(j runSource, tool string, asJSON bool, stdout io.Writer) error {
	rows, versions, err := toolRuns(j, tool)
	if err != nil {
		return err
	}
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
	return printToolRunTables(stdout, tool, rows, versions)
}

// toolIndex is a journal with an index of runs by tool (a
// *journal.Journal opened here).
type toolIndex interface {
	EachRunOf(q journal.ToolQuery, fn func(journal.RunMeta) error) error
	Versions(path string) ([]journal.Version, error)
}

// toolRuns returns the runs of tool, oldest first, and its versions.
func toolRuns(j runSource, tool string) ([]runsRow, []journal.Version, error) {
	rows := []runsRow{}
	if ix, ok := j.(toolIndex); ok {
		err := ix.EachRunOf(journal.ToolQuery{Tool: tool}, func(r journal.RunMeta) error {
			rows = append(rows, newRunsRow(r))
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		slices.Reverse(rows) // oldest first
		versions, err := ix.Versions(tool)
		return rows, versions, err
	}
	var all []journal.RunMeta // the runs VersionsOf needs: the tool's and those requiring it
	err := j.EachRun(journal.RunQuery{Oldest: true}, func(r journal.RunMeta) error {
		requires := slices.ContainsFunc(r.Modules, func(m journal.Module) bool { return m.Path == tool })
		if r.Tool == tool || requires {
			all = append(all, r)
		}
		if r.Tool == tool {
			rows = append(rows, newRunsRow(r))
		}
		return nil
	})
	return rows, journal.VersionsOf(all, tool), err
}

// printToolRunTables prints the runs of tool, then the versions of it the
// journal keeps.
func printToolRunTables(stdout io.Writer, tool string, rows []runsRow, versions []journal.Version) error {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tVERSION\tSTATUS\tDURATION\tCALLS\tMODULES")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", r.ID, short(r.Hash), r.Status, durationCell(r.DurationNS), r.Calls, modulesCell(r.RunMeta))
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
