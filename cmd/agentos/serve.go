package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentos-run/agentos/internal/host"
)

// runServe runs a node until SIGTERM or SIGINT:
// agentos serve [--root DIR] [--metrics ADDR] [--mcp] [--mcp-http ADDR].
// It shuts down gracefully: running tools are cancelled (their journal runs
// stay resumable), workers end, the journal closes, the socket is removed.
//
// With --mcp it also speaks MCP on stdin/stdout as the default process
// (IMPORTANT: stdout is then the protocol's: every other line goes to
// stderr), and stops when the client closes stdin. With --mcp-http ADDR
// (or mcp.serve.http_addr) it serves MCP over streamable HTTP at
// http://ADDR/mcp (docs/MCP.md).
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	metrics := fs.String("metrics", "", "serve Prometheus metrics at http://ADDR/metrics (overrides metrics_addr)")
	clustered := fs.Bool("cluster", false, "join the cluster of agentos.json's cluster section (overrides cluster.enabled and AGENTOS_CLUSTER); see docs/CLUSTER.md")
	clusterName := fs.String("cluster-name", "", "the cluster's name (overrides cluster.name)")
	clusterPort := fs.Int("cluster-port", -1, "the port the node's remote listens on for the other nodes (overrides cluster.port; 0: a free port)")
	healthPort := fs.Int("health-port", -1, "the port of the node's health endpoint, the one the seeds list names (overrides cluster.health_port)")
	seeds := fs.String("seeds", "", "comma-separated host:port health endpoints of every node, this one included (overrides cluster.seeds)")
	etcd := fs.String("etcd", "", "comma-separated etcd client URLs: membership through etcd (sets cluster.provider to etcd)")
	mcpStdio := fs.Bool("mcp", false, "also speak MCP on stdin/stdout as the default process (stdout is then the protocol's; every message goes to stderr); the node stops when the client closes stdin. See docs/MCP.md")
	mcpHTTP := fs.String("mcp-http", "", "also serve MCP over streamable HTTP at http://ADDR/mcp, each request authenticated by a capability token (Authorization: Bearer, see 'agentos token'); overrides mcp.serve.http_addr")
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
	cfg.ResumeForges = true // a serving node resumes the forges a crash interrupted
	if *mcpStdio && nodeServes(abs) {
		// A node serves the root already (it holds the journal): the
		// client's tools run there, through its socket's /mcp.
		if *mcpHTTP != "" {
			return usagef("a node already serves %s: --mcp-http belongs to that node ('agentos serve --mcp-http ADDR' when it starts, or mcp.serve.http_addr)", abs)
		}
		fmt.Fprintf(stderr, "a node already serves %s: bridging MCP on stdin/stdout to it through its socket; it stops when the client closes stdin; if that node stops, it takes over (bridges to the next node serving the root, or starts its own)\n", abs)
		return bridgeMCP(ctx, abs, cfg)
	}
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
	if *mcpHTTP != "" {
		cfg.MCP.Serve.HTTPAddr = *mcpHTTP
	}
	if a := cfg.MCP.Serve.HTTPAddr; a != "" {
		if err := cfg.MCP.Serve.CheckAddr(a); err != nil {
			return usagef("%v", err)
		}
	}
	if *mcpStdio {
		// The protocol owns stdout: the banners go to stderr.
		stdout = stderr
	}
	rt, err := host.Start(ctx, cfg)
	if err != nil {
		return err
	}
	var mcpDone <-chan error
	stopMCP := func() {}
	if *mcpStdio || cfg.MCP.Serve.HTTPAddr != "" {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		if mcpDone, stopMCP, err = serveMCP(ctx, rt, cfg, *mcpStdio, stdout); err != nil {
			cancel()
			return errors.Join(err, rt.Close())
		}
		go func() {
			// The stdio client went away (or HTTP failed): the node stops.
			select {
			case err := <-mcpDone:
				if err != nil {
					cmdLogger(ctx).Error("agentos serve: MCP stopped", "err", err)
				}
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	for _, r := range rt.Recovered() {
		fmt.Fprintf(stdout, "recovered run %s (%s): %s\n", r.Run.ID, r.Run.Tool, r.Summary())
	}
	for _, id := range rt.ResumingForges() {
		fmt.Fprintf(stderr, "resuming interrupted forge run %s in the background: its recorded model answers are replayed, then it goes on with the configured model\n", id)
	}
	fmt.Fprintf(stdout, "agentos node serving %s (pid %d); 'agentos ps', 'events', 'call', 'exec', 'runs', 'trace', 'replay' and 'recover' go through it; SIGTERM stops it\n", abs, os.Getpid())
	if m := rt.Member(); m != nil {
		fmt.Fprintf(stdout, "member of the cluster at %s; 'agentos cluster status' shows the members\n", m.Address())
	}
	if u := rt.MetricsURL(); u != "" {
		fmt.Fprintf(stdout, "metrics at %s (and /healthz, /readyz beside it)\n", u)
	}
	serveErr := rt.Serve(ctx)
	stopMCP() // its sessions and token processes end before the runtime
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
