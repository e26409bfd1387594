package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/node/admin"
)

// runPS prints the process table of the node serving the tool root:
// agentos ps [--root DIR] [--json].
func runPS(ctx context.Context, args []string, stdout, _ io.Writer) error {
	c, asJSON, err := dialNode("ps", args)
	if err != nil {
		return err
	}
	defer c.Close()
	ps, err := c.PS(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return fprintJSON(stdout, map[string]any{"processes": nonNilSlice(ps)})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tPARENT\tNAME\tIMAGE\tSTATUS\tMAILBOX\tCALLS\tUPTIME\tUSAGE\tLEFT")
	for _, p := range ps {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", p.PID, p.Parent, dash(p.Name), dash(p.Image), p.Status, p.Mailbox, p.Calls,
			time.Since(p.Started).Round(time.Second), meters(p.Usage), meters(p.Left))
	}
	return tw.Flush()
}

// dialNode parses --root and --json and connects to the node.
func dialNode(name string, args []string) (*admin.Client, *bool, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print one JSON object {\"processes\": [...]} (events: {\"events\": [...]})")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return nil, nil, err
	}
	if len(pos) != 0 {
		return nil, nil, usagef("%s takes no arguments, got %q", name, pos)
	}
	abs, _, err := openRoot(*root)
	if err != nil {
		return nil, nil, err
	}
	c, err := admin.Dial(abs)
	return c, asJSON, err
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
