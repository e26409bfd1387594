package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/cluster"
	"github.com/agentos-run/agentos/internal/host"
)

// runCluster shows the cluster of the node serving the tool root
// (agentos cluster status [--root DIR] [--json]) or makes the certificates
// of a deployment (agentos cluster certs --dir DIR --node NAME ...).
func runCluster(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub := ""
	if len(args) > 0 {
		sub = args[0]
	}
	switch {
	case sub == "status":
		return runClusterStatus(ctx, args[1:], stdout)
	case sub == "certs":
		return runClusterCerts(args[1:], stdout)
	case sub == "--help" || sub == "-help" || sub == "-h":
		return runClusterStatus(ctx, args, stdout) // the help of status
	case strings.HasPrefix(sub, "-"):
		// Flags before the subcommand: an unknown one is named first.
		fs, _, _ := clusterStatusFlags()
		if _, err := parseFlags(fs, args); err != nil {
			return err
		}
		return usagef("cluster takes its subcommand first: 'agentos cluster status [--root DIR] [--json]' or 'agentos cluster certs --dir DIR --node NAME[,NAME...] [--host H,...]'")
	default:
		return usagef("cluster takes a subcommand: 'agentos cluster status [--root DIR] [--json]' or 'agentos cluster certs --dir DIR --node NAME[,NAME...] [--host H,...]'")
	}
}

// runClusterStatus asks the node serving the tool root for its cluster's
// members: agentos cluster status [--root DIR] [--json].
func runClusterStatus(ctx context.Context, args []string, stdout io.Writer) error {
	fs, root, asJSON := clusterStatusFlags()
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
	var rep host.ClusterReport
	if err := c.Cluster(ctx, &rep); err != nil {
		return err
	}
	if *asJSON {
		return fprintJSON(stdout, rep)
	}
	return printClusterReport(stdout, rep)
}

// printClusterReport prints the members alive and left, and a table of the
// members with the forges each holds.
func printClusterReport(stdout io.Writer, rep host.ClusterReport) error {
	fmt.Fprintf(stdout, "cluster %s, seen from %s: %d member(s) alive", rep.Cluster, rep.Self, len(rep.Members))
	if len(rep.Left) > 0 {
		fmt.Fprintf(stdout, ", left: %s", strings.Join(rep.Left, ", "))
	}
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ADDRESS\tVERSION\tPID\tROOT\tKINDS\tFORGES HELD")
	for _, m := range rep.Members {
		forges := make([]string, len(m.Forges))
		for i, f := range m.Forges {
			forges[i] = f[:min(len(f), 12)]
		}
		held := strings.Join(forges, " ")
		if m.Error != "" {
			held = "did not answer: " + m.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.Address, dash(m.Version), dash(m.PID), dash(m.Root), strings.Join(m.Kinds, ","), dash(held))
	}
	return tw.Flush()
}

// certsReport is what 'agentos cluster certs --json' prints.
type certsReport struct {
	// CA is the CA certificate's path; CAMade is false when DIR already
	// held the CA (then it signed the new certificates).
	CA     string       `json:"ca"`
	CAMade bool         `json:"ca_made"`
	Nodes  []certsEntry `json:"nodes"`
}

type certsEntry struct {
	Name string `json:"name"`
	Cert string `json:"cert"`
	Key  string `json:"key"`
}

// clusterStatusFlags is the flag set of 'cluster status'.
func clusterStatusFlags() (fs *flag.FlagSet, root *string, asJSON *bool) {
	fs = flag.NewFlagSet("cluster status", flag.ContinueOnError)
	root = fs.String("root", ".", rootUsage)
	asJSON = fs.Bool("json", false, "print one JSON object {cluster, self, members: [{id, address, version, kinds, root, pid, forges, activations, error}], left}")
	return fs, root, asJSON
}

// runClusterCerts makes the cluster's CA in DIR (unless DIR holds one) and
// a member certificate per --node: agentos cluster certs --dir DIR --node
// NAME[,NAME...] [--host H,...] [--days N] [--json].
func runClusterCerts(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("cluster certs", flag.ContinueOnError)
	dir := fs.String("dir", "", "the directory of the cluster's CA (ca.crt, ca.key: made there unless it holds them) and of the node certificates")
	nodes := fs.String("node", "", "the names of the nodes to certify, comma-separated: NAME.crt and NAME.key are written in --dir")
	hosts := fs.String("host", "", "the addresses (IPs or DNS names) the nodes are reached at, comma-separated, added to each certificate (informative: members verify the CA, not the host)")
	days := fs.Int("days", 825, "how long the node certificates are valid, in days (the CA: 10 years)")
	asJSON := fs.Bool("json", false, "print one JSON object {ca, ca_made, nodes: [{name, cert, key}]}")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("cluster certs takes no arguments, got %q (names go in --node)", pos)
	}
	if *dir == "" {
		return usagef("cluster certs needs --dir DIR: where the CA is (or is made) and the certificates are written")
	}
	if *days <= 0 {
		return usagef("cluster certs: --days %d: give a positive number of days", *days)
	}
	names := splitComma(*nodes)
	rep := certsReport{CA: filepath.Join(*dir, cluster.CACertFile), Nodes: []certsEntry{}}
	if rep.CAMade, err = cluster.MakeCA(*dir, "agentos", 10*365*24*time.Hour); err != nil {
		return fmt.Errorf("cluster certs: the CA in %s: %w", *dir, err)
	}
	for _, n := range names {
		cert, key, err := cluster.MakeMemberCert(*dir, n, splitComma(*hosts), time.Duration(*days)*24*time.Hour)
		if err != nil {
			return err
		}
		rep.Nodes = append(rep.Nodes, certsEntry{Name: n, Cert: cert, Key: key})
	}
	if *asJSON {
		return fprintJSON(stdout, rep)
	}
	printCerts(stdout, rep, *dir)
	return nil
}

// printCerts says where the CA and each node's certificate are and what to
// do with them.
func printCerts(stdout io.Writer, rep certsReport, dir string) {
	if rep.CAMade {
		fmt.Fprintf(stdout, "made the cluster's CA: %s (its key %s signs members: keep it off the nodes)\n", rep.CA, filepath.Join(dir, cluster.CAKeyFile))
	} else {
		fmt.Fprintf(stdout, "used the cluster's CA in %s\n", dir)
	}
	for _, e := range rep.Nodes {
		fmt.Fprintf(stdout, "node %s: %s, %s (key readable by its owner only)\n", e.Name, e.Cert, e.Key)
	}
	if len(rep.Nodes) > 0 {
		fmt.Fprintf(stdout, "copy ca.crt, NAME.crt and NAME.key to each node and set in its agentos.json: \"cluster\": {\"cert\": ..., \"key\": ..., \"ca\": ...}\n")
	} else {
		fmt.Fprintln(stdout, "no --node given: no node certificate made")
	}
}

// splitComma splits a comma-separated flag value, dropping empty items.
func splitComma(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
