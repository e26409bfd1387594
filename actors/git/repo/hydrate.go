package repo

// Opening a tool root: Hydrate, its repair, the .git configuration, and
// the upstream branch created when absent. The sync it runs is in sync.go.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
)

// Hydrate opens the tool root opts.Dir and brings it to the upstream.
//
// When Dir has no .git, a repository is initialised (built aside and
// renamed into place) and the upstream branch is fetched and checked out
// into Dir: this is init + fetch + checkout, not a clone into another
// directory, so that files already in Dir (agentos.json ...) stay where they
// are. Those not in the upstream stay local: never committed unless a
// Persist names them (they are listed in .git/info/exclude); those the
// upstream also has are replaced by the upstream's version (with a
// warning). When the upstream has no such branch yet, an initial empty
// commit creates it.
//
// When Dir has a .git, stale temporary files of a killed writer are
// removed, the upstream is fetched and the working tree fast-forwarded.
// Local commits that were never pushed (a kill between commit and push)
// are replayed on top of the upstream as in Persist and pushed (Direct);
// uncommitted changes to the working tree (files a killed writer left
// unsaved) are kept, and in Direct mode committed under their own commit
// "agentos: recover unsaved <paths>" and pushed, except those Options.Hold
// refuses, which stay uncommitted (see recover.go): IMPORTANT: they are
// never swept into a later Persist of another path. A tracked file missing
// from the working tree is restored.
//
// Then Regenerate is called. Hydrate runs under the tool root's lock, from
// its first step: processes sharing a tool root take turns. Before the
// update it verifies the tool root's object store and repairs damage from
// the upstream (see the package doc). Entries of the upstream's tree that
// are not regular files are never checked out (see Refused), and the
// node-local paths (agentos.json, .agentos/, .git/) are never written.
func Hydrate(ctx context.Context, opts Options) (_ *Repo, err error) {
	InstallTransport()
	o, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	r := &Repo{
		opts:      o,
		log:       o.Logger,
		gitDir:    filepath.Join(o.Dir, ".git"),
		branchRef: plumbing.NewBranchReferenceName(o.Branch),
		trackRef:  plumbing.NewRemoteReferenceName("origin", o.Branch),
		conflicts: map[string]conflictRecord{},
		refused:   map[string]Refusal{},
	}
	defer func() {
		if err != nil && r.sto != nil {
			_ = r.sto.Close()
		}
	}()
	defer recoverInto(&err, r.log, "hydrating "+o.Dir)
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("repo: creating the tool root: %w", err)
	}
	unlock, err := r.lockRoot(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.hydrate(ctx); err != nil {
		return nil, err
	}
	r.remember()
	return r, nil
}

// hydrate is Hydrate under the tool root's lock.
func (r *Repo) hydrate(ctx context.Context) error {
	o := r.opts
	removeStaleInits(o.Dir)
	if fi, err := os.Stat(r.gitDir); errors.Is(err, fs.ErrNotExist) {
		if err := newGitDir(r.gitDir, r.config(), o.Branch); err != nil {
			return fmt.Errorf("repo: initialising %s: %w", r.gitDir, err)
		}
	} else if err != nil {
		return fmt.Errorf("repo: %w", err)
	} else if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory (a worktree link is not supported)", ErrOptions, r.gitDir)
	}
	if removed := cleanStale(r.gitDir, 0, true); len(removed) > 0 {
		r.log.Info("git: removed stale files of a killed writer", slog.Any("files", removed))
	}
	if err := r.ensureConfig(); err != nil {
		return err
	}
	r.sto = newStore(r.gitDir, r.log)
	repaired, err := r.checkStore()
	if err != nil {
		return err
	}
	r.recovering = true
	if repaired {
		err = r.repair(ctx, nil)
	} else if err = r.sync(ctx); damaged(err) {
		err = r.repair(ctx, err)
	}
	r.recovering = false
	if err != nil {
		return err
	}
	r.log.Info("git: hydrated", slog.String("dir", o.Dir), slog.String("head", short(r.local)))
	return nil
}

// repair brings a damaged tool root back (see repair.go): verify and
// salvage the store, then sync in repair mode (full fetch, unreadable
// local commits dropped, working files kept). cause is the failure that
// revealed the damage (nil when the verification did).
func (r *Repo) repair(ctx context.Context, cause error) error {
	if cause != nil {
		r.log.Warn("git: the local repository is damaged; repairing it from the upstream", slog.String("err", cause.Error()))
		if _, err := r.checkStore(); err != nil {
			return err
		}
		if err := r.sto.reopen(r.gitDir); err != nil {
			r.log.Warn("git: closing the object store", slog.String("err", err.Error()))
		}
	}
	// The files of the local commits a repair drops stay in the working
	// tree: recovered under their own commit, like a killed writer's.
	r.repairing, r.recovering = true, true
	defer func() { r.repairing, r.recovering = false, false }()
	return r.sync(ctx)
}

// config is the .git/config this package writes.
func (r *Repo) config() *config.Config {
	cfg := config.NewConfig()
	cfg.Core.IsBare = false
	cfg.Remotes["origin"] = &config.RemoteConfig{
		Name:  "origin",
		URLs:  []string{r.opts.Upstream},
		Fetch: []config.RefSpec{config.RefSpec("+refs/heads/*:refs/remotes/origin/*")},
	}
	cfg.Branches[r.opts.Branch] = &config.Branch{Name: r.opts.Branch, Remote: "origin", Merge: r.branchRef}
	return cfg
}

// ensureConfig rewrites .git/config when it is unreadable or names another
// upstream, and HEAD when it does not point at the branch.
func (r *Repo) ensureConfig() error {
	if !r.configCurrent() {
		if err := writeConfig(r.gitDir, r.config()); err != nil {
			return fmt.Errorf("repo: writing %s/config: %w", r.gitDir, err)
		}
	}
	head, _ := os.ReadFile(filepath.Join(r.gitDir, "HEAD"))
	if strings.TrimSpace(string(head)) != "ref: "+r.branchRef.String() {
		if err := writeSymRef(r.gitDir, plumbing.HEAD, r.branchRef); err != nil {
			return fmt.Errorf("repo: writing %s/HEAD: %w", r.gitDir, err)
		}
	}
	for _, d := range layout {
		if err := os.MkdirAll(filepath.Join(r.gitDir, filepath.FromSlash(d)), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// configCurrent says whether .git/config reads and names the upstream as
// origin's one URL.
func (r *Repo) configCurrent() bool {
	b, err := os.ReadFile(filepath.Join(r.gitDir, "config"))
	if err != nil {
		return false
	}
	cfg := config.NewConfig()
	if cfg.Unmarshal(b) != nil {
		return false
	}
	rc := cfg.Remotes["origin"]
	return rc != nil && len(rc.URLs) == 1 && rc.URLs[0] == r.opts.Upstream
}

func (r *Repo) regenerate() error {
	if r.walk != nil { // this sync's scan, for the first Regenerate
		r.opts.Walked(r.walk, r.walkSkipped)
		r.walk, r.walkSkipped, r.walkGiven = nil, nil, true
	}
	if r.opts.Regenerate == nil {
		return nil
	}
	if err := r.opts.Regenerate(); err != nil {
		return fmt.Errorf("repo: regenerating derived files %v: %w", r.opts.Derived, err)
	}
	return nil
}

// createBranch makes the upstream branch with an initial empty commit.
func (r *Repo) createBranch(ctx context.Context) (plumbing.Hash, error) {
	tree, err := writeTree(r.sto, nil)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	c, err := r.writeCommit(tree, plumbing.ZeroHash, "agentos: initial commit", r.signature())
	if err != nil {
		return plumbing.ZeroHash, err
	}
	err = r.push(ctx, r.branchRef, plumbing.ZeroHash, c, []plumbing.Hash{c, tree})
	if errors.Is(err, errStale) { // someone else created it first
		u, ferr := r.fetch(ctx)
		if ferr == nil && !u.IsZero() {
			return u, nil
		}
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	r.log.Info("git: created the upstream branch", slog.String("branch", r.opts.Branch))
	return c, nil
}
