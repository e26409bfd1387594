package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/agentos-run/agentos/journal"
)

// runTrace shows a run step by step: agentos trace [--root DIR] [--json] RUN.
func runTrace(ctx context.Context, args []string, stdout, _ io.Writer) error {
	c := newJournalCmd("trace", "print the whole run as one JSON object {run, source, entries}")
	pos, _, _, j, err := c.openRun(ctx, args, "one RUN id (or a unique prefix)") // from the node when one serves the root
	if err != nil {
		return err
	}
	defer j.Close()
	asJSON := c.asJSON
	d, err := j.Export(pos[0])
	if err != nil {
		return usagef("%v", err)
	}
	if *asJSON {
		return fprintJSON(stdout, d)
	}
	m := d.Run
	fmt.Fprintf(stdout, "run %s: %s %s, %s", m.ID, m.Kind, m.Tool, m.Shown())
	if m.Duration() > 0 {
		fmt.Fprintf(stdout, " in %v", m.Duration().Round(time.Microsecond))
	}
	fmt.Fprintf(stdout, "\nstarted %s, tool hash %.12s, args %s\n", m.Started.Format(time.RFC3339Nano), m.Hash, m.Args)
	if m.Kind == "exec" {
		fmt.Fprintf(stdout, "modules %s", modulesCell(m))
		if m.Commit != "" {
			fmt.Fprintf(stdout, ", tool tree at commit %.12s", m.Commit)
		}
		fmt.Fprintln(stdout)
	}
	printTraceID(stdout, m)
	for _, e := range d.Entries {
		out := string(e.Response)
		if e.Error != nil {
			out = "error " + e.Error.Code + ": " + e.Error.Message
		}
		fmt.Fprintf(stdout, "  #%-4d %-16s %s -> %s  (%v)\n", e.Seq, e.Driver+"."+e.Op, clip(string(e.Request), 80), clip(out, 100), e.Duration.Round(time.Microsecond))
	}
	printLogs(stdout, m)
	switch {
	case m.Status == "ok":
		fmt.Fprintf(stdout, "result %s\n", clip(string(m.Result), 400))
	case m.Reason != "":
		fmt.Fprintf(stdout, "failed: %s\n", m.Reason)
	case len(m.Error) > 0:
		fmt.Fprintf(stdout, "error %s\n", clip(string(m.Error), 400))
	default:
		fmt.Fprintln(stdout, "the run has not ended: it is in flight, or a crash interrupted it ('agentos recover' resumes it)")
	}
	return nil
}

// clip shortens s to n bytes for a one-line display.
func clip(s string, n int) string {
	if s == "" {
		return "-"
	}
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("... (%d bytes)", len(s))
}

// printTraceID says which OpenTelemetry trace holds the run's spans.
func printTraceID(w io.Writer, m journal.RunMeta) {
	if m.TraceID == "" {
		fmt.Fprintln(w, "trace id none (the run was recorded with tracing off, or before agentos kept trace ids)")
		return
	}
	fmt.Fprintf(w, "trace id %s (OpenTelemetry: look it up in your collector)\n", m.TraceID)
}

// printLogs prints the run's journaled logs, one "| " line each, and how
// many lines the journal's bound left out.
func printLogs(w io.Writer, m journal.RunMeta) {
	if len(m.Logs) == 0 && m.LogsCut == 0 {
		return
	}
	fmt.Fprintf(w, "logs (%s)\n", plural(len(m.Logs), "line"))
	for _, l := range m.Logs {
		fmt.Fprintf(w, "  | %s\n", l)
	}
	if m.LogsCut > 0 {
		fmt.Fprintf(w, "  (%s more not kept or cut: the journal keeps %d KiB of a run's logs)\n", plural(m.LogsCut, "line"), journal.MaxRunLogBytes>>10)
	}
}

// plural is "1 line", "2 lines".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
