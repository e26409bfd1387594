package repo

// Persist: collecting the named files, committing them, and publishing them
// (Direct: publish; PR: a feat/ branch and a pull request).

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Persist commits the current content of paths (plus the Derived files and
// any change Hydrate kept) with message, and publishes it (see Strategy).
// Paths are relative to the tool root; a directory stands for the files
// under it; a missing file is a deletion; ignored paths (.agentos/ ...) are
// skipped. When nothing changed, Persist is a no-op (no empty commit).
//
// Direct: the commit is pushed to Branch. When the push is rejected
// because another writer moved the branch, the upstream is fetched, the
// commit rebuilt on top of it (working tree reset to upstream, our files
// re-applied, Regenerate, commit again) and pushed again, up to
// Options.Retries attempts with a random, growing pause (1-20 ms). If the
// upstream changed one of our paths to different content since our base,
// the error is a *ConflictError (ErrConflict): our version is on branch
// "conflict/<tool>-<time>" and the working tree holds the upstream's.
// A file written but not yet persisted is never overwritten by such a
// rebase: when the upstream changed it too, its version is pushed to a
// conflict branch at once, the working tree keeps it, and the Persist of
// that file returns the *ConflictError (then resets it to the upstream's).
//
// PR: the commit is made on a new branch "feat/<tool>-<time>" from the
// upstream's branch, that branch is pushed (Branch is never written) and
// PR.Open is called with Title "agentos: <message>", Head the branch and
// Base Branch. The working tree keeps the new files. Only paths (and the
// Derived files) are proposed: earlier proposals still in the working tree
// are not bundled in.
func (r *Repo) Persist(ctx context.Context, paths []string, message string) (_ Persisted, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return Persisted{}, ErrClosed
	}
	defer func() {
		if errors.Is(err, ErrInternal) {
			r.resync = true // the state may be half-updated: reload it from disk
		}
	}()
	defer recoverInto(&err, r.log, "persisting "+strings.Join(paths, ", "))
	unlock, err := r.lockRoot(ctx)
	if err != nil {
		return Persisted{}, err
	}
	defer unlock()
	defer r.remember()
	r.refresh()
	p, err := r.persist(ctx, paths, message)
	if damaged(err) && ctx.Err() == nil {
		// A missing or unreadable object: repair from the upstream (the
		// working files are kept) and write again.
		if rerr := r.repair(ctx, err); rerr != nil {
			return p, fmt.Errorf("%w (and the repair failed: %v)", err, rerr)
		}
		if p, err = r.persist(ctx, paths, message); err == nil {
			r.dropIntents(paths)
		}
		return p, err
	}
	if err == nil {
		r.dropIntents(paths) // committed: no longer a write under way
	}
	return p, err
}

// persist is Persist under the locks.
func (r *Repo) persist(ctx context.Context, paths []string, message string) (Persisted, error) {
	if strings.TrimSpace(message) == "" {
		message = "agentos: update " + strings.Join(paths, ", ")
	}
	if !strings.HasSuffix(message, "\n") {
		message += "\n"
	}
	var want []string
	for _, p := range paths {
		if filepath.IsAbs(p) {
			rel, err := filepath.Rel(r.opts.Dir, p)
			if err != nil {
				return Persisted{}, fmt.Errorf("%w: %s: %v", ErrPath, p, err)
			}
			p = rel
		}
		c, err := cleanRel(p)
		if err != nil {
			return Persisted{}, fmt.Errorf("%w: %v", ErrPath, err)
		}
		if r.ignored(c) {
			r.log.Debug("git: not committing an ignored path", slog.String("path", c))
			continue
		}
		want = append(want, c)
	}
	if r.resync {
		if err := r.sync(ctx); err != nil {
			return Persisted{}, err
		}
	}
	r.publishLocal(want)
	if r.opts.Strategy == PR {
		return r.persistPR(ctx, want, message)
	}
	return r.persistDirect(ctx, want, message)
}

// publishLocal takes the local files (localOnly) named by paths off the
// list: a Persist that names one publishes it.
func (r *Repo) publishLocal(paths []string) {
	changed := false
	for _, p := range paths {
		for q := range r.localOnly {
			if within(q, p) {
				delete(r.localOnly, q)
				changed = true
			}
		}
	}
	if changed {
		if err := r.saveLocalOnly(); err != nil {
			r.log.Warn("git: updating .git/"+excludeFile, slog.String("err", err.Error()))
		}
	}
}

// derivedPaths brings the Derived files up to date (Derive) and returns
// those a commit must read: every one without Derive; with it, those
// Derive reported changed and no commit has taken yet (r.derivedDirty).
func (r *Repo) derivedPaths() ([]string, error) {
	if r.opts.Derive == nil {
		return r.opts.Derived, nil
	}
	changed, err := r.opts.Derive()
	if err != nil {
		return nil, fmt.Errorf("repo: bringing the derived files up to date: %w", err)
	}
	if r.derivedDirty == nil {
		r.derivedDirty = map[string]bool{}
	}
	for _, p := range changed {
		c, err := cleanRel(p)
		if err != nil || !r.isDerived(c) {
			return nil, fmt.Errorf("repo: Derive reported %q, which is not one of the Derived files", p)
		}
		r.derivedDirty[c] = true
	}
	return sortedKeys(r.derivedDirty), nil
}

// derivedTaken forgets the Derived files a commit has just taken.
func (r *Repo) derivedTaken() { clear(r.derivedDirty) }

// collect reads the working-tree content of paths and the Derived files
// that may have changed (derivedPaths), stores new blobs, and returns what
// differs from r.tree.
func (r *Repo) collect(paths []string) (map[string]entry, error) {
	derived, err := r.derivedPaths()
	if err != nil {
		return nil, err
	}
	all := append([]string{}, paths...)
	all = append(all, derived...)
	c := &collection{r: r, changes: map[string]entry{}, seen: map[string]bool{}}
	for i, p := range all {
		if err := c.addPath(p, i < len(paths)); err != nil {
			return nil, err
		}
	}
	return c.changes, nil
}

// collection is what collect has read so far: the changes, and the paths
// seen.
type collection struct {
	r       *Repo
	changes map[string]entry
	seen    map[string]bool
}

// addPath adds the working file or directory p (named: one of the paths
// asked for, not a derived file), and the deletion of the tracked files
// under it that are gone from the working tree.
func (c *collection) addPath(p string, named bool) error {
	if named && c.r.linkAt(p, true) != "" {
		return c.add(p, true)
	}
	fi, err := os.Lstat(c.r.abs(p))
	if err == nil && fi.IsDir() {
		err = c.r.walkWork(p, func(q string, _ fs.DirEntry) error { return c.add(q, false) })
	} else {
		err = c.add(p, named)
	}
	if err != nil {
		return err
	}
	prefix := p + "/"
	for q := range c.r.files {
		if strings.HasPrefix(q, prefix) && !c.seen[q] {
			if _, err := os.Lstat(c.r.abs(q)); gone(err) {
				c.seen[q] = true
				c.changes[q] = entry{}
			}
		}
	}
	return nil
}

// add reads the working file p (storing its blob) and records it when it
// differs from r.files. A symbolic link is an error when named, and
// otherwise skipped with a warning.
func (c *collection) add(p string, named bool) error {
	if c.seen[p] || c.r.ignored(p) {
		return nil
	}
	c.seen[p] = true
	e, err := c.r.workEntry(p, true)
	var le *linkError
	if errors.As(err, &le) {
		if named {
			return fmt.Errorf("%w: %v", ErrPath, err)
		}
		c.r.log.Warn("git: not committing a symbolic link", slog.String("path", p), slog.String("link", le.link))
		return nil
	}
	if err != nil {
		return fmt.Errorf("repo: reading %s: %w", p, err)
	}
	if e != c.r.files[p] {
		c.changes[p] = e
	}
	return nil
}

func (r *Repo) persistDirect(ctx context.Context, paths []string, message string) (Persisted, error) {
	// IMPORTANT: only paths (and the derived files): a file another writer
	// left unsaved (r.pending) is never swept into this commit under this
	// message; Hydrate recovers it under its own (recoverUnsaved).
	changes, err := r.collect(paths)
	if err != nil {
		return Persisted{}, err
	}
	conflict, err := r.takeConflicts(ctx, paths, changes)
	if err != nil {
		return Persisted{}, err
	}
	mine, err := r.commitChanges(changes, message, paths)
	if err != nil {
		return Persisted{}, err
	}
	r.derivedTaken() // committed, or the tree already held them
	if r.local == r.upstream {
		if conflict != nil {
			return Persisted{Commit: conflict.commit.String(), Branch: conflict.err.Branch}, conflict.err
		}
		return Persisted{Commit: r.local.String(), Branch: r.opts.Branch}, nil
	}
	attempts, results, err := r.publish(ctx)
	out, mineErr := r.publishOutcome(mine, conflict, results)
	out.Attempts = attempts
	if serr := r.saveRefs(); serr != nil && err == nil {
		err = fmt.Errorf("repo: writing %s/packed-refs: %w", r.gitDir, serr)
	}
	if err != nil {
		return out, err
	}
	if mineErr != nil {
		return out, mineErr
	}
	r.log.Info("git: persisted", slog.String("commit", short(r.local)), slog.Int("attempts", attempts), slog.String("tool", r.toolName(paths)))
	return out, nil
}

// commitChanges commits changes (read from paths) on r.local with message
// and returns the new change set, or nil when r.tree already holds them.
func (r *Repo) commitChanges(changes map[string]entry, message string, paths []string) (*changeSet, error) {
	if len(changes) == 0 {
		return nil, nil
	}
	tree, err := updateTree(r.sto, r.tree, changes)
	if err != nil || tree == r.tree {
		return nil, err
	}
	c, err := r.writeCommit(tree, r.local, message, r.signature())
	if err != nil {
		return nil, err
	}
	return r.adoptLocal(c, tree, changes, message, r.toolName(paths))
}

// adoptLocal makes the commit c (of tree, made of changes) the head of
// the local branch and a new change set of r.chain: the working tree
// moves to tree, the files of changes left as they are and no longer
// pending.
func (r *Repo) adoptLocal(c, tree plumbing.Hash, changes map[string]entry, message, tool string) (*changeSet, error) {
	r.local = c
	keep := make(map[string]bool, len(changes))
	for p := range changes {
		keep[p] = true
	}
	if err := r.moveTo(tree, keep); err != nil {
		return nil, err
	}
	for p := range changes {
		delete(r.pending, p)
	}
	cs := &changeSet{commit: c, tree: tree, message: message, author: r.signature(), tool: tool, changes: changes}
	r.chain = append(r.chain, cs)
	return cs, nil
}

// publishOutcome is what a Direct Persist reports after publishing: the
// new head, or the conflict branch or fencing that took its change set
// mine (or the conflict taken before, of a path it was asked to persist),
// with that error. The results about other change sets are logged.
func (r *Repo) publishOutcome(mine *changeSet, conflict *conflictResult, results []conflictResult) (out Persisted, mineErr error) {
	out = Persisted{Commit: r.local.String(), Branch: r.opts.Branch}
	if conflict != nil {
		mineErr = conflict.err
		out.Commit, out.Branch = conflict.commit.String(), conflict.err.Branch
	}
	for _, res := range results {
		switch {
		case res.set == mine && res.fenced:
			run, fence, _ := fenceOf(mine.message)
			mineErr = fmt.Errorf("%w: forge run %s (fencing token %d) was taken over and committed by a newer holder; this commit was dropped, the upstream's version kept", ErrFenced, run, fence)
			out.Commit = r.upstream.String()
		case res.set == mine:
			mineErr = res.err
			out.Commit, out.Branch = res.commit.String(), res.err.Branch
		default:
			r.warnConflicts([]conflictResult{res})
		}
	}
	return out, mineErr
}

func (r *Repo) persistPR(ctx context.Context, paths []string, message string) (Persisted, error) {
	if err := r.catchUp(ctx); err != nil {
		return Persisted{}, err
	}
	// Only the given paths (and the derived files): earlier proposals still
	// in the working tree are not bundled into this one.
	changes, err := r.collect(paths)
	if err != nil {
		return Persisted{}, err
	}
	tree, err := updateTree(r.sto, r.tree, changes)
	if err != nil {
		return Persisted{}, err
	}
	if tree == r.tree {
		return Persisted{Commit: r.local.String(), Branch: r.opts.Branch}, nil
	}
	c, err := r.writeCommit(tree, r.upstream, message, r.signature())
	if err != nil {
		return Persisted{}, err
	}
	r.derivedTaken()
	upTree, err := r.commitTree(r.upstream)
	if err != nil {
		return Persisted{}, err
	}
	objs := map[plumbing.Hash]bool{c: true}
	if err := newObjects(r.sto, upTree, tree, objs); err != nil {
		return Persisted{}, err
	}
	tool := r.toolName(paths)
	branch, err := r.pushNewBranch(ctx, "feat/"+tool+"-"+r.stamp(), c, objs)
	if err != nil {
		return Persisted{}, err
	}
	for p := range changes {
		delete(r.pending, p)
	}
	if err := r.flush(); err != nil {
		return Persisted{}, err
	}
	out := Persisted{Commit: c.String(), Branch: branch, Attempts: 1}
	r.log.Info("git: pushed a branch for review", slog.String("branch", branch), slog.String("tool", tool))
	url, err := r.openPR(ctx, message, c, branch, sortedKeys(changes))
	if err != nil {
		return out, err
	}
	out.PRURL = url
	return out, nil
}

// catchUp fetches and, when the upstream moved, rebases the tool root on
// it (writing the refs and the derived files).
func (r *Repo) catchUp(ctx context.Context) error {
	u, err := r.fetch(ctx)
	if err != nil || u.IsZero() || u == r.upstream {
		return err
	}
	results, err := r.rebaseOnto(ctx, u)
	if err != nil {
		return err
	}
	r.warnConflicts(results)
	if err := r.saveRefs(); err != nil {
		return err
	}
	return r.regenerate()
}

// openPR opens the pull request of the pushed branch (commit c, changing
// files) and returns its address. Its error wraps ErrPullRequest and says
// the branch is pushed.
func (r *Repo) openPR(ctx context.Context, message string, c plumbing.Hash, branch string, files []string) (string, error) {
	list := make([]string, 0, len(files))
	for _, p := range files {
		list = append(list, "- "+p)
	}
	url, err := r.opts.PR.Open(ctx, PullRequest{
		Title: "agentos: " + strings.TrimSpace(message),
		Head:  branch,
		Base:  r.opts.Branch,
		Body:  "Forged by agentos.\n\n" + strings.TrimSpace(message) + "\n\nCommit " + c.String() + "\n\n" + strings.Join(list, "\n") + "\n",
	})
	if err == nil {
		return url, nil
	}
	if !errors.Is(err, ErrPullRequest) {
		err = fmt.Errorf("%w: %v", ErrPullRequest, err)
	}
	return "", fmt.Errorf("%w (branch %s is pushed: open the pull request by hand)", err, branch)
}
