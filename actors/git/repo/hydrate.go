package repo

// Opening a tool root: Hydrate, the sync it runs (fetch, first checkout or
// replay of the local work) and the scan of the working tree.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
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
	b, err := os.ReadFile(filepath.Join(r.gitDir, "config"))
	ok := false
	if err == nil {
		cfg := config.NewConfig()
		if cfg.Unmarshal(b) == nil {
			if rc := cfg.Remotes["origin"]; rc != nil && len(rc.URLs) == 1 && rc.URLs[0] == r.opts.Upstream {
				ok = true
			}
		}
	}
	if !ok {
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

// sync loads the state from disk, fetches, and brings the tool root to the
// upstream (see Hydrate). Called with r.mu held.
func (r *Repo) sync(ctx context.Context) error {
	r.resync = true
	// No checkout ever completed here: no ref, and no index (written after
	// the refs at the end of every sync).
	_, ierr := os.Lstat(filepath.Join(r.gitDir, "index"))
	fresh := !r.refRecorded(r.branchRef) && errors.Is(ierr, fs.ErrNotExist)
	local := r.readRef(r.branchRef)
	track := r.readRef(r.trackRef)
	if r.repairing {
		// Fetch everything the upstream has, not only what is new: a
		// repair lost objects the upstream still holds.
		r.fullFetch = true
		if !track.IsZero() && r.readableHistory(track, plumbing.ZeroHash, 1) != nil {
			track = plumbing.ZeroHash
		}
	}
	r.local, r.upstream = local, track
	u, err := r.fetch(ctx)
	if err != nil {
		return err
	}
	if u.IsZero() {
		if u, err = r.createBranch(ctx); err != nil {
			return err
		}
	}
	if r.repairing && !local.IsZero() {
		if err := r.readableHistory(local, track, maxWalk); err != nil {
			r.log.Warn("git: the local commits not yet upstream can no longer be read; they are dropped, and every working file that differs from the upstream is kept and recovered under its own commit",
				slog.String("head", local.String()), slog.String("damage", err.Error()))
			local = plumbing.ZeroHash
		}
	}
	if local.IsZero() && !fresh {
		r.log.Warn("git: the tool root's branch is missing or damaged; checking out the upstream's and keeping every working file that differs from it (recovered under its own commit)",
			slog.String("branch", r.opts.Branch))
	}
	r.loadIndex()
	r.loadLocalOnly()
	r.pending = map[string]bool{}
	r.files = map[string]entry{}
	r.chain = nil
	if local.IsZero() {
		if err := r.firstCheckout(u, fresh); err != nil {
			return err
		}
	} else {
		if r.tree, err = r.commitTree(local); err != nil {
			return err
		}
		if r.files, err = flatten(r.sto, r.tree); err != nil {
			return err
		}
		if err := r.scanDirty(); err != nil {
			return err
		}
		if err := r.loadChain(local, track, u); err != nil {
			return err
		}
		results, err := r.rebaseOnto(ctx, u)
		if err != nil {
			return err
		}
		r.warnConflicts(results)
	}
	if r.opts.Strategy == Direct {
		if r.recovering {
			if err := r.recoverUnsaved(); err != nil {
				return err
			}
		}
		if len(r.chain) > 0 {
			r.log.Info("git: pushing local commits left unpushed", slog.Int("commits", len(r.chain)))
			_, results, err := r.publish(ctx)
			r.warnConflicts(results)
			if err != nil {
				return err
			}
		}
	}
	if err := r.saveRefs(); err != nil {
		return fmt.Errorf("repo: writing %s/packed-refs: %w", r.gitDir, err)
	}
	if err := r.regenerate(); err != nil {
		return err
	}
	if err := r.writeIndex(); err != nil {
		return fmt.Errorf("repo: writing the index: %w", err)
	}
	r.resync = false
	return nil
}

func (r *Repo) regenerate() error {
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

// firstCheckout checks out u into a tool root whose branch is unknown
// (absent, or dropped by a repair). Working files the upstream does not
// have stay: in a fresh tool root (no checkout ever completed in it) they
// are the user's own files and stay local (localOnly, never committed
// unless a Persist names them); after a repair they are changes of lost
// local commits, recovered under their own commit. Working files that differ
// from the upstream's are replaced by the upstream's version in a fresh
// tool root (with a warning), and kept after a repair.
func (r *Repo) firstCheckout(u plumbing.Hash, fresh bool) error {
	uTree, err := r.commitTree(u)
	if err != nil {
		return err
	}
	ufiles, err := flatten(r.sto, uTree)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	var localOnly, kept, links []string
	err = r.walkWork("", func(p string, d fs.DirEntry) error {
		e, err := r.workEntry(p, false)
		var le *linkError
		if errors.As(err, &le) {
			links = append(links, p)
			return nil
		}
		if err != nil {
			return err
		}
		uf, inUpstream := ufiles[p]
		switch {
		case r.localOnly[p]:
			keep[p] = inUpstream
		case !inUpstream:
			if fresh && !r.isDerived(p) {
				localOnly = append(localOnly, p)
			} else {
				r.pending[p] = true
			}
		case uf == e:
			keep[p] = true
		case fresh || !r.guarded(p):
			r.log.Warn("git: a file already in the tool root is replaced by the upstream's version", slog.String("path", p))
		default:
			keep[p], r.pending[p] = true, true
			kept = append(kept, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(links) > 0 {
		r.log.Warn("git: symbolic links in the tool root are never committed", slog.Any("paths", links))
	}
	if len(kept) > 0 {
		r.log.Warn("git: kept working files that differ from the upstream (changes of local commits that could not be read); they are recovered under their own commit", slog.Any("paths", kept))
	}
	if len(localOnly) > 0 {
		for _, p := range localOnly {
			r.localOnly[p] = true
		}
		if err := r.saveLocalOnly(); err != nil {
			return fmt.Errorf("repo: recording the local files in %s: %w", excludeFile, err)
		}
		r.log.Info("git: files that were in the tool root before its first checkout and that the upstream does not have stay local (listed in .git/"+excludeFile+"); a write of one of them (write_file, Persist by name) publishes it",
			slog.Int("files", len(localOnly)), slog.Any("paths", firstN(localOnly, 20)))
	}
	r.tree = plumbing.ZeroHash
	r.direct = fresh
	err = r.moveTo(uTree, keep)
	r.direct = false
	if err != nil {
		return err
	}
	r.local, r.upstream = u, u
	return nil
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(append([]string{}, s[:n]...), fmt.Sprintf("... and %d more", len(s)-n))
}

// scanDirty finds the working-tree files that differ from r.files
// (pending) and restores tracked files that are missing. A symbolic link
// at a tracked path (an earlier version checked out links from the
// upstream) is removed (and the tracked file restored when it is a
// regular file); other links are never committed.
func (r *Repo) scanDirty() error {
	seen := map[string]bool{}
	var links []string
	err := r.walkWork("", func(p string, d fs.DirEntry) error {
		seen[p] = true
		if d.Type()&fs.ModeSymlink != 0 {
			f, tracked := r.files[p]
			if !tracked {
				links = append(links, p)
				return nil
			}
			if err := os.Remove(r.abs(p)); err != nil {
				return err
			}
			r.log.Warn("git: removed a symbolic link at a tracked path of the tool root", slog.String("path", p), slog.String("tracked mode", f.mode.String()))
			return r.writeWork(p, f)
		}
		if r.localOnly[p] {
			return nil
		}
		f, tracked := r.files[p]
		if tracked {
			if fi, err := d.Info(); err == nil && r.statClean(p, f.hash, fi) {
				return nil
			}
		}
		e, err := r.workEntry(p, false)
		var le *linkError
		if errors.As(err, &le) {
			return nil
		}
		if err != nil {
			return err
		}
		if e != f {
			if c, ok := r.conflicts[p]; ok && c.entry == e {
				return nil // on a conflict branch; its tool's Persist reports it
			}
			r.pending[p] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(links) > 0 {
		r.log.Warn("git: symbolic links in the tool root are never committed", slog.Any("paths", links))
	}
	for _, p := range sortedKeys(r.files) {
		f := r.files[p]
		if !seen[p] && !r.ignored(p) && safeTreePath(p) {
			if why := checkoutRefusal(f.mode); why != "" {
				r.refuse(p, f, why)
				continue
			}
			r.log.Info("git: restoring a tracked file missing from the tool root", slog.String("path", p))
			if err := r.writeWork(p, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadChain finds the local commits not known to be upstream: those after
// the tracking ref (or after u, or after their merge base with u).
func (r *Repo) loadChain(local, track, u plumbing.Hash) error {
	var commits []*object.Commit
	base := plumbing.ZeroHash
	found := false
	for h, n := local, 0; !h.IsZero() && n < maxWalk; n++ {
		if h == track || h == u {
			base, found = h, true
			break
		}
		c, err := object.GetCommit(r.sto, h)
		if err != nil {
			return err
		}
		commits = append(commits, c)
		if len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	if !found {
		commits = nil
		lc, err := object.GetCommit(r.sto, local)
		if err != nil {
			return err
		}
		uc, err := object.GetCommit(r.sto, u)
		if err != nil {
			return err
		}
		if mbs, err := lc.MergeBase(uc); err == nil && len(mbs) > 0 {
			base = mbs[0].Hash
		}
		for h := local; !h.IsZero() && h != base; {
			c, err := object.GetCommit(r.sto, h)
			if err != nil {
				return err
			}
			commits = append(commits, c)
			if len(c.ParentHashes) == 0 {
				break
			}
			h = c.ParentHashes[0]
		}
	}
	r.upstream = base
	r.chain = nil
	for i := len(commits) - 1; i >= 0; i-- {
		c := commits[i]
		parentTree := plumbing.ZeroHash
		if len(c.ParentHashes) > 0 {
			t, err := r.commitTree(c.ParentHashes[0])
			if err != nil {
				return err
			}
			parentTree = t
		}
		cs := &changeSet{commit: c.Hash, tree: c.TreeHash, message: c.Message, author: c.Author, changes: map[string]entry{}}
		if err := diffTrees(r.sto, parentTree, c.TreeHash, func(p string, _, to entry) { cs.changes[p] = to }); err != nil {
			return err
		}
		cs.tool = r.toolName(sortedKeys(cs.changes))
		r.chain = append(r.chain, cs)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
