package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/agentos-run/agentos/internal/host"
)

// syncedTool resolves --root and the PATH argument of the commands that
// read a tool (exec, check): the absolute tool root, its configuration, and
// PATH relative to it. Before PATH is resolved, the tool root is brought up
// to date with its Git upstream when it is behind (agentos.SyncTools: one
// ls-remote when it is current). An unreachable upstream is a warning on
// stderr, never a failure: the local copy is used.
func syncedTool(ctx context.Context, cmd, root, path string, mustBeRoot bool, stderr io.Writer) (absRoot string, cfg host.Config, rel string, err error) {
	if absRoot, cfg, err = openDir(root, mustBeRoot); err != nil {
		return "", cfg, "", err
	}
	if !mustBeRoot && !isToolRoot(absRoot) {
		// Outside any tool root (check, exec --no-journal): a file
		// anywhere runs from its own directory.
		if abs, err := filepath.Abs(path); err == nil && outside(absRoot, abs) {
			if absRoot, cfg, err = openDir(filepath.Dir(abs), false); err != nil {
				return "", cfg, "", err
			}
		}
	}
	if _, err := host.SyncTools(ctx, cfg, absRoot, nil); err != nil {
		fmt.Fprintf(stderr, "agentos %s: warning: the tools could not be brought up to date (%v); using the local copy\n", cmd, err)
	}
	rel, err = toolPath(absRoot, path)
	return absRoot, cfg, rel, err
}
