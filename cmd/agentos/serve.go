package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentos-run/agentos"
)

// runServe runs a node until SIGTERM or SIGINT:
// agentos serve [--root DIR] [--metrics ADDR].
// It shuts down gracefully: running tools are cancelled (their journal runs
// stay resumable), workers end, the journal closes, the socket is removed.
func runServe(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	metrics := fs.String("metrics", "", "serve Prometheus metrics at http://ADDR/metrics (overrides metrics_addr)")
	clustered := fs.Bool("cluster", false, "join the cluster of agentos.json's cluster section (overrides cluster.enabled and AGENTOS_CLUSTER); see docs/CLUSTER.md")
	clusterName := fs.String("cluster-name", "", "the cluster's name (overrides cluster.name)")
	clusterPort := fs.Int("cluster-port", -1, "the port the node's remote listens on for the other nodes (overrides cluster.port; 0: a free port)")
	healthPort := fs.Int("health-port", -1, "the port of the node's health endpoint, the one the seeds list names (overrides cluster.health_port)")
	seeds := fs.String("seeds", "", "comma-separated host:port health endpoints of every node, this one included (overrides cluster.seeds)")
	etcd := fs.String("etcd", "", "comma-separated etcd client URLs: membership through etcd (sets cluster.provider to etcd)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("serve takes no arguments, got %q", pos)
	}
	abs, cfg, err := openRoot(*root)
	if err != nil {
		return err
	}
	cfg.Root = abs
	cfg.Logger = cmdLogger(ctx)
	if *metrics != "" {
		cfg.MetricsAddr = *metrics
	}
	// The cluster's settings: the file, then the environment, then the
	// flags.
	if cfg.Cluster, err = cfg.Cluster.WithEnv(nil); err != nil {
		return usagef("%v", err)
	}
	for _, p := range []int{*clusterPort, *healthPort} {
		if p > 65535 || p < -1 {
			return usagef("--cluster-port and --health-port take a port number (0: a free port), got %d", p)
		}
	}
	if *clustered {
		cfg.Cluster.Enabled = true
	}
	if *clusterName != "" {
		cfg.Cluster.Name = *clusterName
	}
	if *clusterPort >= 0 {
		cfg.Cluster.Port = *clusterPort
	}
	if *healthPort >= 0 {
		cfg.Cluster.HealthPort = *healthPort
	}
	if *seeds != "" {
		cfg.Cluster.Seeds = strings.Split(*seeds, ",")
	}
	if *etcd != "" {
		cfg.Cluster.Provider, cfg.Cluster.Etcd.Endpoints = "etcd", strings.Split(*etcd, ",")
	}
	rt, err := agentos.Start(ctx, cfg)
	if err != nil {
		return err
	}
	for _, r := range rt.Recovered() {
		fmt.Fprintf(stdout, "recovered run %s (%s): %s\n", r.Run.ID, r.Run.Tool, r.Summary())
	}
	fmt.Fprintf(stdout, "agentos node serving %s (pid %d); 'agentos ps', 'events', 'call', 'exec', 'runs', 'trace', 'replay' and 'recover' go through it; SIGTERM stops it\n", abs, os.Getpid())
	if m := rt.Member(); m != nil {
		fmt.Fprintf(stdout, "member of the cluster at %s; 'agentos cluster status' shows the members\n", m.Address())
	}
	if u := rt.MetricsURL(); u != "" {
		fmt.Fprintf(stdout, "metrics at %s\n", u)
	}
	serveErr := rt.Serve(ctx)
	closeErr := rt.Close()
	if serveErr != nil {
		return serveErr
	}
	if closeErr != nil {
		return closeErr
	}
	fmt.Fprintln(stdout, "agentos node stopped cleanly")
	return nil
}
