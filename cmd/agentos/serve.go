package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentos-run/agentos/console"
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
	f, err := parseServeFlags(args)
	if err != nil {
		return err
	}
	abs, cfg, err := openRoot(f.root)
	if err != nil {
		return err
	}
	cfg.Root = abs
	cfg.Logger = cmdLogger(ctx)
	cfg.ResumeForges = true // a serving node resumes the forges a crash interrupted
	if f.mcpStdio && nodeServes(abs) {
		return bridgeServingNode(ctx, abs, cfg, f, stderr)
	}
	if err := f.apply(&cfg); err != nil {
		return err
	}
	if f.mcpStdio {
		// The protocol owns stdout: the banners go to stderr.
		stdout = stderr
	}
	rt, err := host.Start(ctx, cfg)
	if err != nil {
		return err
	}
	ctx, stopMCP, cancel, err := startServeMCP(ctx, rt, cfg, f.mcpStdio, stdout)
	if err != nil {
		return errors.Join(err, rt.Close())
	}
	defer cancel()
	stopUI, err := serveUI(ctx, rt, cfg, stdout)
	if err != nil {
		stopMCP()
		return errors.Join(err, rt.Close())
	}
	printServeBanners(rt, abs, stdout, stderr)
	return serveUntilStopped(ctx, rt, func() { stopUI(); stopMCP() }, stdout)
}

// serveFlags are the flags of 'agentos serve'.
type serveFlags struct {
	root, metrics, clusterName, seeds, etcd, mcpHTTP, ui string
	clustered, mcpStdio, uiAnonymous                     bool
	clusterPort, healthPort                              int
}

// parseServeFlags parses serve's command line; it takes no positional
// argument.
func parseServeFlags(args []string) (serveFlags, error) {
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&f.root, "root", ".", rootUsage)
	fs.StringVar(&f.metrics, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics (overrides metrics_addr)")
	fs.BoolVar(&f.clustered, "cluster", false, "join the cluster of agentos.json's cluster section (overrides cluster.enabled and AGENTOS_CLUSTER); see docs/CLUSTER.md")
	fs.StringVar(&f.clusterName, "cluster-name", "", "the cluster's name (overrides cluster.name)")
	fs.IntVar(&f.clusterPort, "cluster-port", -1, "the port the node's remote listens on for the other nodes (overrides cluster.port; 0: a free port)")
	fs.IntVar(&f.healthPort, "health-port", -1, "the port of the node's health endpoint, the one the seeds list names (overrides cluster.health_port)")
	fs.StringVar(&f.seeds, "seeds", "", "comma-separated host:port health endpoints of every node, this one included (overrides cluster.seeds)")
	fs.StringVar(&f.etcd, "etcd", "", "comma-separated etcd client URLs: membership through etcd (sets cluster.provider to etcd)")
	fs.BoolVar(&f.mcpStdio, "mcp", false, "also speak MCP on stdin/stdout as the default process (stdout is then the protocol's; every message goes to stderr); the node stops when the client closes stdin. See docs/MCP.md")
	fs.StringVar(&f.mcpHTTP, "mcp-http", "", "also serve MCP over streamable HTTP at http://ADDR/mcp, each request authenticated by a capability token (Authorization: Bearer, see 'agentos token'); overrides mcp.serve.http_addr")
	fs.StringVar(&f.ui, "ui", "", "also serve the web console at http://ADDR/ (overrides ui.addr); it asks for a capability token unless --ui-anonymous. See docs/CONSOLE.md")
	fs.BoolVar(&f.uiAnonymous, "ui-anonymous", false, "serve the console without a login, as the default process (loopback addresses only; sets ui.anonymous)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return f, err
	}
	if len(pos) != 0 {
		return f, usagef("serve takes no arguments, got %q", pos)
	}
	return f, nil
}

// bridgeServingNode bridges MCP on stdin/stdout to the node that already
// serves abs (it holds the journal): the client's tools run there, through
// its socket's /mcp. --mcp-http belongs to that node and is refused here.
func bridgeServingNode(ctx context.Context, abs string, cfg host.Config, f serveFlags, stderr io.Writer) error {
	if f.mcpHTTP != "" {
		return usagef("a node already serves %s: --mcp-http belongs to that node ('agentos serve --mcp-http ADDR' when it starts, or mcp.serve.http_addr)", abs)
	}
	fmt.Fprintf(stderr, "a node already serves %s: bridging MCP on stdin/stdout to it through its socket; it stops when the client closes stdin; if that node stops, it takes over (bridges to the next node serving the root, or starts its own)\n", abs)
	return bridgeMCP(ctx, abs, cfg)
}

// apply lays the flags over cfg: the metrics address, the cluster's
// settings (the file, then the environment, then the flags) and MCP's
// HTTP address, which it checks.
func (f serveFlags) apply(cfg *host.Config) error {
	if f.metrics != "" {
		cfg.MetricsAddr = f.metrics
	}
	if err := f.applyCluster(cfg); err != nil {
		return err
	}
	if f.mcpHTTP != "" {
		cfg.MCP.Serve.HTTPAddr = f.mcpHTTP
	}
	if err := f.applyUI(cfg); err != nil {
		return err
	}
	if a := cfg.MCP.Serve.HTTPAddr; a != "" {
		if err := cfg.MCP.Serve.CheckAddr(a); err != nil {
			return usagef("%v", err)
		}
	}
	return nil
}

// applyUI lays --ui and --ui-anonymous over the ui section and refuses
// anonymous access that is not on loopback before the node starts.
func (f serveFlags) applyUI(cfg *host.Config) error {
	if f.ui != "" {
		cfg.UI.Addr = f.ui
	}
	if f.uiAnonymous {
		cfg.UI.Anonymous = true
	}
	switch {
	case cfg.UI.Anonymous && cfg.UI.Addr == "":
		return usagef("--ui-anonymous serves the console without a login: give its address with --ui 127.0.0.1:PORT (or ui.addr)")
	case cfg.UI.Anonymous && !console.LoopbackAddr(cfg.UI.Addr):
		return usagef("the console is served without a login only on a loopback address, not %q: use --ui 127.0.0.1:PORT, or drop --ui-anonymous (ui.anonymous) and log in with a token ('agentos token')", cfg.UI.Addr)
	}
	return nil
}

// applyCluster lays the environment, then the cluster flags, over the
// file's cluster section.
func (f serveFlags) applyCluster(cfg *host.Config) error {
	var err error
	if cfg.Cluster, err = cfg.Cluster.WithEnv(nil); err != nil {
		return usagef("%v", err)
	}
	for _, p := range []int{f.clusterPort, f.healthPort} {
		if p > 65535 || p < -1 {
			return usagef("--cluster-port and --health-port take a port number (0: a free port), got %d", p)
		}
	}
	if f.clustered {
		cfg.Cluster.Enabled = true
	}
	if f.clusterName != "" {
		cfg.Cluster.Name = f.clusterName
	}
	if f.clusterPort >= 0 {
		cfg.Cluster.Port = f.clusterPort
	}
	if f.healthPort >= 0 {
		cfg.Cluster.HealthPort = f.healthPort
	}
	if f.seeds != "" {
		cfg.Cluster.Seeds = strings.Split(f.seeds, ",")
	}
	if f.etcd != "" {
		cfg.Cluster.Provider, cfg.Cluster.Etcd.Endpoints = "etcd", strings.Split(f.etcd, ",")
	}
	return nil
}

// startServeMCP starts MCP on stdin/stdout and/or HTTP when asked for. It
// returns the context the node then serves under (cancelled when the stdio
// client goes away or HTTP fails: the node stops), the function that ends
// MCP's sessions, and the context's cancel; the caller MUST call cancel.
// Without MCP they are ctx and no-ops.
func startServeMCP(ctx context.Context, rt *host.Runtime, cfg host.Config, stdio bool, stdout io.Writer) (context.Context, func(), context.CancelFunc, error) {
	if !stdio && cfg.MCP.Serve.HTTPAddr == "" {
		return ctx, func() {}, func() {}, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	mcpDone, stopMCP, err := serveMCP(ctx, rt, cfg, stdio, stdout)
	if err != nil {
		cancel()
		return nil, nil, nil, err
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
	return ctx, stopMCP, cancel, nil
}

// printServeBanners says what the node recovered and resumes, where it
// serves, its cluster membership and its metrics address.
func printServeBanners(rt *host.Runtime, abs string, stdout, stderr io.Writer) {
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
}

// serveUntilStopped serves until ctx ends, then ends MCP's sessions and
// token processes before it closes the runtime.
func serveUntilStopped(ctx context.Context, rt *host.Runtime, stopMCP func(), stdout io.Writer) error {
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
