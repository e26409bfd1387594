package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/capability"
)

// runPS prints the process table of the node serving the tool root:
// agentos ps [--root DIR] [--json].
func runPS(ctx context.Context, args []string, stdout, _ io.Writer) error {
	c, f, err := dialNode("ps", args)
	if err != nil {
		return err
	}
	defer c.Close()
	type nodeProc struct {
		Node string `json:"node,omitempty"`
		kernel.ProcInfo
	}
	var ps []nodeProc
	var failed []string
	if f.cluster {
		replies, err := c.ClusterPS(ctx)
		if err != nil {
			return err
		}
		failed = fromNodes(replies, func(node string, p kernel.ProcInfo) { ps = append(ps, nodeProc{Node: node, ProcInfo: p}) })
	} else {
		part, err := c.PS(ctx)
		if err != nil {
			return err
		}
		for _, p := range part {
			ps = append(ps, nodeProc{ProcInfo: p})
		}
	}
	if f.json {
		return printNodesJSON(stdout, "processes", nonNilSlice(ps), failed)
	}
	t := newNodeTable(stdout, f.cluster, "PID\tPARENT\tNAME\tIMAGE\tSTATUS\tMAILBOX\tCALLS\tUPTIME\tUSAGE\tLEFT")
	for _, p := range ps {
		t.row(p.Node, "%d\t%d\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", p.PID, p.Parent, dash(p.Name), dash(p.Image), p.Status, p.Mailbox, p.Calls,
			time.Since(p.Started).Round(time.Second), meters(p.Usage), meters(p.Left))
	}
	return t.finish(failed)
}

// nodeTable is the table ps and events print: with --cluster (cluster)
// each row starts with its member's address, and the members that did not
// answer are said after the rows.
type nodeTable struct {
	tw      *tabwriter.Writer
	cluster bool
}

// newNodeTable starts the table with its header line head (columns
// separated by tabs; NODE is added first with --cluster).
func newNodeTable(w io.Writer, cluster bool, head string) *nodeTable {
	t := &nodeTable{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0), cluster: cluster}
	if cluster {
		head = "NODE\t" + head
	}
	fmt.Fprintln(t.tw, head)
	return t
}

// row prints one row of member node's, formatted as fmt.Fprintf does.
func (t *nodeTable) row(node, format string, args ...any) {
	if t.cluster {
		fmt.Fprintf(t.tw, "%s\t", node)
	}
	fmt.Fprintf(t.tw, format, args...)
}

// finish says which members did not answer and flushes the table.
func (t *nodeTable) finish(unanswered []string) error {
	for _, f := range unanswered {
		fmt.Fprintln(t.tw, f)
	}
	return t.tw.Flush()
}

// fromNodes decodes every member's reply (a JSON array of T) and hands
// each item to add with its member's address; it returns a line for each
// member that did not answer.
func fromNodes[T any](replies []admin.NodeReply, add func(node string, item T)) (unanswered []string) {
	for _, r := range replies {
		var part []T
		if r.Error != "" || json.Unmarshal(r.Result, &part) != nil {
			unanswered = append(unanswered, fmt.Sprintf("%s did not answer: %s", r.Node, r.Error))
			continue
		}
		for _, x := range part {
			add(r.Node, x)
		}
	}
	return unanswered
}

// printNodesJSON prints {key: items} and, when some member did not
// answer, "unanswered".
func printNodesJSON(w io.Writer, key string, items any, unanswered []string) error {
	out := map[string]any{key: items}
	if len(unanswered) > 0 {
		out["unanswered"] = unanswered
	}
	return fprintJSON(w, out)
}

// nodeFlags are the flags ps and events share.
type nodeFlags struct{ json, cluster bool }

// dialNode parses --root and --json and connects to the node.
func dialNode(name string, args []string) (*admin.Client, nodeFlags, error) {
	var f nodeFlags
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	fs.BoolVar(&f.json, "json", false, "print one JSON object {\"processes\": [...]} (events: {\"events\": [...]}); with --cluster each carries its \"node\"")
	fs.BoolVar(&f.cluster, "cluster", false, "ask every member of the serving node's cluster (their kernel actors), not only this node")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return nil, f, err
	}
	if len(pos) != 0 {
		return nil, f, usagef("%s takes no arguments, got %q", name, pos)
	}
	abs, _, err := openRoot(*root)
	if err != nil {
		return nil, f, err
	}
	c, err := admin.Dial(abs)
	return c, f, err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func meters(m map[capability.Meter]float64) string {
	if len(m) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s=%g", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
