package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

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
	rt, err := agentos.Start(ctx, cfg)
	if err != nil {
		return err
	}
	for _, r := range rt.Recovered() {
		fmt.Fprintf(stdout, "recovered run %s (%s): %s\n", r.Run.ID, r.Run.Tool, r.Summary())
	}
	fmt.Fprintf(stdout, "agentos node serving %s (pid %d); 'agentos ps', 'events', 'call', 'exec', 'runs', 'trace', 'replay' and 'recover' go through it; SIGTERM stops it\n", abs, os.Getpid())
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
