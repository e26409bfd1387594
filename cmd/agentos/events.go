package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// runEvents prints the recent kernel events of the node serving the tool
// root (spawn, exit with reason, signal, restart, quota charge, capability
// refusal): agentos events [--root DIR] [--json].
func runEvents(ctx context.Context, args []string, stdout, _ io.Writer) error {
	c, asJSON, err := dialNode("events", args)
	if err != nil {
		return err
	}
	defer c.Close()
	evs, err := c.Events(ctx, 0, 0)
	if err != nil {
		return err
	}
	if *asJSON {
		return fprintJSON(stdout, map[string]any{"events": nonNilSlice(evs)})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tKIND\tPID\tNAME\tDETAIL")
	for _, e := range evs {
		detail := e.Detail
		switch {
		case e.Reason != "" && detail != "":
			detail = e.Reason + " (" + detail + ")"
		case e.Reason != "":
			detail = e.Reason
		case e.Meter != "":
			detail = fmt.Sprintf("%g %s", e.Amount, e.Meter)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", e.Seq, e.Time.Format(time.TimeOnly), e.Kind, e.PID, dash(e.Name), dash(detail))
	}
	return tw.Flush()
}
