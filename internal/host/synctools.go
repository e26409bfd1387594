package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/actors/registry"
	"github.com/agentos-run/agentos/vfs"
)

// SyncTools brings the tool root at root up to date with cfg.Git.Upstream
// when it is behind, for commands that read the tools without starting a
// runtime (agentos exec, agentos check). Start hydrates by itself.
//
// The check is cheap: one reference advertisement from the upstream
// (repo.Behind: no fetch, no lock) when the tool root is current; only a
// tool root that is behind (or was never checked out, e.g. right after
// 'agentos init --upstream URL') is hydrated, with meta.json rebuilt. It
// returns whether it hydrated. Without an upstream it does nothing.
//
// IMPORTANT: an unreachable upstream MUST NOT stop a local read: the error
// wraps repo.ErrUpstream and the caller goes on with the local copy (with a
// warning).
func SyncTools(ctx context.Context, cfg Config, root string, log *slog.Logger) (hydrated bool, err error) {
	if cfg.Git.Upstream == "" {
		return false, nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if root, err = filepath.Abs(root); err != nil {
		return false, err
	}
	opts := cfg.repoOptions(root, nil, log)
	behind, err := repo.Behind(ctx, opts)
	if err != nil || !behind {
		return false, err
	}
	jail, err := vfs.Open(root)
	if err != nil {
		return false, err
	}
	defer jail.Close()
	reg, err := registry.Open(jail, registry.Options{ToolsDir: cfg.Tools(), File: RegistryFile, Threshold: cfg.ReuseThreshold, Logger: log})
	if err != nil {
		return false, err
	}
	opts.Regenerate = reg.Rebuild
	r, err := repo.Hydrate(ctx, opts)
	if err != nil {
		return false, errors.Join(fmt.Errorf("bringing the tools up to date from %s: %w", cfg.Git.Upstream, err), reg.Flush())
	}
	return true, errors.Join(r.Close(), reg.Flush())
}
