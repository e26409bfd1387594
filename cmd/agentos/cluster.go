package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/agentos-run/agentos"
	"github.com/agentos-run/agentos/node/admin"
)

// runCluster shows the cluster of the node serving the tool root:
// agentos cluster status [--root DIR] [--json].
func runCluster(ctx context.Context, args []string, stdout, _ io.Writer) error {
	switch {
	case len(args) > 0 && args[0] == "status":
		args = args[1:]
	case len(args) > 0 && (args[0] == "--help" || args[0] == "-help" || args[0] == "-h"):
		// the help of its one subcommand
	default:
		return usagef("cluster takes a subcommand: 'agentos cluster status [--root DIR] [--json]'")
	}
	fs := flag.NewFlagSet("cluster status", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print one JSON object {cluster, self, members: [{id, address, kinds, root, pid, forges, activations, error}], left}")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("cluster status takes no arguments, got %q", pos)
	}
	abs, _, err := openRoot(*root)
	if err != nil {
		return err
	}
	c, err := admin.Dial(abs)
	if err != nil {
		return err
	}
	defer c.Close()
	var rep agentos.ClusterReport
	if err := c.Cluster(ctx, &rep); err != nil {
		return err
	}
	if *asJSON {
		return fprintJSON(stdout, rep)
	}
	fmt.Fprintf(stdout, "cluster %s, seen from %s: %d member(s) alive", rep.Cluster, rep.Self, len(rep.Members))
	if len(rep.Left) > 0 {
		fmt.Fprintf(stdout, ", left: %s", strings.Join(rep.Left, ", "))
	}
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ADDRESS\tPID\tROOT\tKINDS\tFORGES HELD")
	for _, m := range rep.Members {
		forges := make([]string, len(m.Forges))
		for i, f := range m.Forges {
			forges[i] = f[:min(len(f), 12)]
		}
		held := strings.Join(forges, " ")
		if m.Error != "" {
			held = "did not answer: " + m.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Address, dash(m.PID), dash(m.Root), strings.Join(m.Kinds, ","), dash(held))
	}
	return tw.Flush()
}
