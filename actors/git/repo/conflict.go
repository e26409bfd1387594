package repo

// Conflict branches: a local version that clashes with the upstream is
// pushed to "conflict/<tool>-<time>" and reported as a *ConflictError.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

func (r *Repo) warnConflicts(results []conflictResult) {
	for _, c := range results {
		if c.fenced {
			run, fence, _ := fenceOf(c.set.message)
			r.log.Warn("git: a commit of a forge run another holder took over was dropped", slog.String("run", run), slog.Int64("fence", fence))
			continue
		}
		r.log.Warn("git: a local change conflicted with the upstream; it was pushed to a branch for review",
			slog.String("tool", c.err.Tool), slog.String("branch", c.err.Branch), slog.Any("paths", c.err.Paths))
	}
}

// conflictOf pushes the entries of paths (taken from changes) to a
// conflict branch in one commit whose message says what they are.
func (r *Repo) conflictOf(ctx context.Context, u, uTree plumbing.Hash, what string, paths []string, changes map[string]entry) (conflictResult, error) {
	sub := make(map[string]entry, len(paths))
	for _, p := range paths {
		sub[p] = changes[p]
	}
	cs := &changeSet{message: "agentos: " + what + " " + strings.Join(paths, ", ") + "\n", author: r.signature(), tool: r.toolName(paths), changes: sub}
	return r.pushConflict(ctx, u, uTree, cs, paths)
}

// pushConflict pushes a change set that clashed with the upstream to a new
// branch "conflict/<tool>-<time>" made from u.
func (r *Repo) pushConflict(ctx context.Context, u, uTree plumbing.Hash, cs *changeSet, bad []string) (conflictResult, error) {
	plain := map[string]entry{}
	for p, e := range cs.changes {
		if !r.isDerived(p) {
			plain[p] = e
		}
	}
	t, err := updateTree(r.sto, uTree, plain)
	if err != nil {
		return conflictResult{}, err
	}
	c, err := r.writeCommit(t, u, cs.message, cs.author)
	if err != nil {
		return conflictResult{}, err
	}
	objs := map[plumbing.Hash]bool{c: true}
	if err := newObjects(r.sto, uTree, t, objs); err != nil {
		return conflictResult{}, err
	}
	branch, err := r.pushNewBranch(ctx, "conflict/"+cs.tool+"-"+r.stamp(), c, objs)
	if err != nil {
		return conflictResult{}, fmt.Errorf("pushing the conflicting version of %s: %w", cs.tool, err)
	}
	return conflictResult{set: cs, commit: c, err: &ConflictError{Tool: cs.tool, Paths: bad, Branch: branch, Base: r.opts.Branch}}, nil
}

// pushNewBranch creates the upstream branch name (or name-2, name-3 ...
// when it exists) at c.
func (r *Repo) pushNewBranch(ctx context.Context, name string, c plumbing.Hash, objs map[plumbing.Hash]bool) (string, error) {
	list := make([]plumbing.Hash, 0, len(objs))
	for h := range objs {
		list = append(list, h)
	}
	var err error
	for i := 1; i <= 20; i++ {
		b := name
		if i > 1 {
			b = fmt.Sprintf("%s-%d", name, i)
		}
		err = r.push(ctx, plumbing.NewBranchReferenceName(b), plumbing.ZeroHash, c, list)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, errStale) {
			return "", err
		}
	}
	return "", err
}

// proposed says whether a proposal branch of the upstream (feat/...,
// conflict/..., as advertised at the last fetch, and made by this node, so
// that its commit is here) holds e at p.
func (r *Repo) proposed(p string, e entry) bool {
	for name, h := range r.remote {
		if !strings.HasPrefix(name, "refs/heads/feat/") && !strings.HasPrefix(name, "refs/heads/conflict/") {
			continue
		}
		c, err := object.GetCommit(r.sto, h)
		if err != nil {
			continue
		}
		t, err := c.Tree()
		if err != nil {
			continue
		}
		te, err := t.FindEntry(p)
		if err == nil && te.Hash == e.hash && te.Mode == e.mode {
			return true
		}
	}
	return false
}

// takeConflicts removes from changes the paths a rebase kept although they
// clash with the upstream (r.conflicts): their version goes to a conflict
// branch (the one the rebase pushed, unless the file changed since), the
// working file is reset to the upstream's version. It returns the conflict
// of a path among paths (what the caller asked to persist), if any; the
// others are logged.
func (r *Repo) takeConflicts(ctx context.Context, paths []string, changes map[string]entry) (*conflictResult, error) {
	var stale []string
	for p := range changes {
		if _, ok := r.conflicts[p]; ok {
			stale = append(stale, p)
		}
	}
	if len(stale) == 0 {
		return nil, nil
	}
	sort.Strings(stale)
	mine, fresh := r.pushedConflicts(stale, paths, changes)
	if len(fresh) > 0 {
		// Rewritten since: still based on the old version.
		upTree, err := r.commitTree(r.upstream)
		if err != nil {
			return nil, err
		}
		res, err := r.conflictOf(ctx, r.upstream, upTree, "changes to", fresh, changes)
		if err != nil {
			return nil, err
		}
		if mine == nil && askedFor(fresh[0], paths) {
			mine = &res
		} else {
			r.warnConflicts([]conflictResult{res})
		}
	}
	for _, p := range stale {
		delete(changes, p)
		delete(r.conflicts, p)
		delete(r.pending, p)
		if err := r.resetWork(p); err != nil {
			return nil, err
		}
	}
	return mine, nil
}

// pushedConflicts sorts the conflicting paths stale: those whose change
// is still the version the rebase pushed to a conflict branch give that
// conflict (the first of a path among paths is returned as mine, those of
// other paths are logged); the others, rewritten since, are returned as
// fresh.
func (r *Repo) pushedConflicts(stale, paths []string, changes map[string]entry) (mine *conflictResult, fresh []string) {
	for _, p := range stale {
		c := r.conflicts[p]
		if changes[p] != c.entry {
			fresh = append(fresh, p)
			continue
		}
		res := conflictResult{commit: c.commit, err: c.err}
		switch {
		case !askedFor(p, paths):
			r.warnConflicts([]conflictResult{res})
		case mine == nil:
			mine = &res
		}
	}
	return mine, fresh
}

// askedFor says whether p is one of paths or under one of them.
func askedFor(p string, paths []string) bool {
	for _, q := range paths {
		if within(p, q) {
			return true
		}
	}
	return false
}
