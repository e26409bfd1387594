package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/agentos-run/agentos"
)

// runInit scaffolds a tool root: agentos init [DIR].
func runInit(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	upstream := fs.String("upstream", "", "the Git upstream `URL` tools are shared through (default: a bare repository DIR.git created beside the tool root)")
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
	created, err := agentos.Init(dir, agentos.InitOptions{Upstream: *upstream, NoGit: *noGit})
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
	fmt.Fprintf(stdout, "next: write a tool under %s/, then 'agentos check' and 'agentos exec' it\n", agentos.DefaultTools)
	return nil
}
