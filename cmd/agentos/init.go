package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/scaffold"
)

// runInit scaffolds a tool root: agentos init [DIR].
func runInit(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	upstream := fs.String("upstream", "", "the Git upstream `URL` tools are shared through: https:// or ssh:// URL, file:// URL or path (a missing one is created as a bare repository; a relative path is from the current directory); default: a bare repository DIR.git created beside the tool root")
	noGit := fs.Bool("no-git", false, "keep tools in the working tree only, without Git")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("expected at most one directory, got %d arguments", len(pos))
	}
	dir := "."
	if len(pos) == 1 {
		dir = pos[0]
	}
	if *noGit && *upstream != "" {
		return usagef("--upstream and --no-git exclude each other")
	}
	up, err := upstreamFromRoot(*upstream, dir)
	if err != nil {
		return err
	}
	created, err := host.Init(dir, host.InitOptions{Upstream: up, NoGit: *noGit})
	if err != nil {
		return err
	}
	abs, _ := filepath.Abs(dir)
	if len(created) == 0 {
		fmt.Fprintf(stdout, "%s is already a tool root; nothing to create\n", abs)
		return nil
	}
	fmt.Fprintf(stdout, "initialised tool root %s\n", abs)
	for _, c := range created {
		fmt.Fprintf(stdout, "  created %s\n", c)
	}
	fmt.Fprintf(stdout, "next: write a tool under %s/, then 'agentos check' and 'agentos exec' it\n", host.DefaultTools)
	return nil
}

// upstreamFromRoot turns a relative local --upstream, given from the
// current directory as every path argument is, into the path relative to
// the tool root dir that agentos.json holds (Init creates a missing one).
func upstreamFromRoot(upstream, dir string) (string, error) {
	p, local := scaffold.LocalUpstream(upstream)
	if upstream == "" || !local || filepath.IsAbs(p) || strings.HasPrefix(upstream, "file://") {
		return upstream, nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(absDir, abs)
	if err != nil {
		return abs, nil
	}
	return filepath.ToSlash(rel), nil
}
