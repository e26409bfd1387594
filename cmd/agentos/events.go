package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
)

// runEvents prints the recent kernel events of the node serving the tool
// root (spawn, exit with reason, signal, restart, quota charge, capability
// refusal): agentos events [--root DIR] [--json].
func runEvents(ctx context.Context, args []string, stdout, _ io.Writer) error {
	c, f, err := dialNode("events", args)
	if err != nil {
		return err
	}
	defer c.Close()
	type nodeEvent struct {
		Node string `json:"node,omitempty"`
		kernel.Event
	}
	var evs []nodeEvent
	var failed []string
	if f.cluster {
		replies, err := c.ClusterEvents(ctx, 0)
		if err != nil {
			return err
		}
		failed = fromNodes(replies, func(node string, e kernel.Event) { evs = append(evs, nodeEvent{Node: node, Event: e}) })
		sort.SliceStable(evs, func(i, j int) bool { return evs[i].Time.Before(evs[j].Time) })
	} else {
		part, err := c.Events(ctx, 0, 0)
		if err != nil {
			return err
		}
		for _, e := range part {
			evs = append(evs, nodeEvent{Event: e})
		}
	}
	if f.json {
		return printNodesJSON(stdout, "events", nonNilSlice(evs), failed)
	}
	t := newNodeTable(stdout, f.cluster, "SEQ\tTIME\tKIND\tPID\tNAME\tDETAIL")
	for _, e := range evs {
		t.row(e.Node, "%d\t%s\t%s\t%d\t%s\t%s\n", e.Seq, e.Time.Format(time.TimeOnly), e.Kind, e.PID, dash(e.Name), dash(eventDetail(e.Event)))
	}
	return t.finish(failed)
}

// eventDetail is an event's DETAIL column: its reason with the detail in
// parentheses, or the amount charged to a meter.
func eventDetail(e kernel.Event) string {
	switch {
	case e.Reason != "" && e.Detail != "":
		return e.Reason + " (" + e.Detail + ")"
	case e.Reason != "":
		return e.Reason
	case e.Meter != "":
		return fmt.Sprintf("%g %s", e.Amount, e.Meter)
	}
	return e.Detail
}
