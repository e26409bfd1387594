package repo

import (
	"context"
	"log/slog"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
)

// conflictResult is one change set that could not be replayed.
type conflictResult struct {
	set    *changeSet
	commit plumbing.Hash // pushed to err.Branch
	err    *ConflictError
}

// rebaseOnto rebuilds the unpushed commits (r.chain) and the uncommitted
// changes (r.pending) on top of the upstream commit u: the working tree is
// reset to u, each commit's files are re-applied, Regenerate rebuilds the
// derived files, and the commit is made again. A commit that changed a path
// the upstream also changed, to different content, is not replayed: it is
// pushed to a conflict branch and reported. On return r.upstream = u.
func (r *Repo) rebaseOnto(ctx context.Context, u plumbing.Hash) ([]conflictResult, error) {
	if u == r.upstream {
		return nil, nil // the chain is already based on u
	}
	r.resync = true
	baseTree, err := r.commitTree(r.upstream)
	if err != nil {
		return nil, err
	}
	uTree, err := r.commitTree(u)
	if err != nil {
		return nil, err
	}
	theirs := map[string]entry{}
	if err := diffTrees(r.sto, baseTree, uTree, func(p string, _, to entry) { theirs[p] = to }); err != nil {
		return nil, err
	}
	clash := func(changes map[string]entry) []string {
		var bad []string
		for p, ours := range changes {
			if t, changed := theirs[p]; changed && t != ours && !r.isDerived(p) {
				bad = append(bad, p)
			}
		}
		sort.Strings(bad)
		return bad
	}

	// 1. Conflicts, published before anything local changes. The local
	// changes are the pending paths and every working file the update
	// would overwrite or delete that no longer holds r.files' content (a
	// tool wrote it and has not persisted it yet).
	var results []conflictResult
	var reset []string // pushed to a conflict branch: take the upstream's
	keep := map[string]bool{}
	pendingChanges := map[string]entry{}
	for _, p := range sortedKeys(r.pending) {
		e, err := r.workEntry(p, true)
		if err != nil {
			return nil, err
		}
		pendingChanges[p] = e
	}
	candidates := map[string]bool{}
	if err := diffTrees(r.sto, r.tree, uTree, func(p string, _, _ entry) { candidates[p] = true }); err != nil {
		return nil, err
	}
	for _, cs := range r.chain {
		for p := range cs.changes {
			candidates[p] = true
		}
	}
	dirty := map[string]entry{}
	for _, p := range sortedKeys(candidates) {
		if r.pending[p] || !r.guarded(p) || !safeTreePath(p) || r.ignored(p) {
			continue
		}
		e, changed, err := r.workDirty(p, r.files[p])
		if err != nil {
			return nil, err
		}
		if changed {
			dirty[p] = e
			keep[p] = true
		}
	}
	if bad := clash(pendingChanges); len(bad) > 0 {
		if r.opts.Strategy == PR {
			// The working tree keeps the local version (still pending); it
			// is pushed for review unless a proposal already holds it.
			var fresh []string
			for _, p := range bad {
				if !r.proposed(p, pendingChanges[p]) {
					fresh = append(fresh, p)
				}
			}
			if len(fresh) > 0 {
				res, err := r.conflictOf(ctx, u, uTree, "uncommitted changes to", fresh, pendingChanges)
				if err != nil {
					return nil, err
				}
				results = append(results, res)
			} else {
				r.log.Warn("git: the upstream changed files this node had proposed; the working tree keeps the proposed version", slog.Any("paths", bad))
			}
		} else {
			for _, p := range bad {
				delete(r.pending, p)
				reset = append(reset, p)
			}
			res, err := r.conflictOf(ctx, u, uTree, "uncommitted changes to", bad, pendingChanges)
			if err != nil {
				return nil, err
			}
			results = append(results, res)
		}
	}
	if bad := clash(dirty); len(bad) > 0 && r.opts.Strategy != PR {
		// Written by a tool that has not persisted it yet: its version is
		// pushed to a conflict branch now, the working tree keeps it, and
		// the tool's Persist of it reports the conflict.
		res, err := r.conflictOf(ctx, u, uTree, "unpersisted changes to", bad, dirty)
		if err != nil {
			return nil, err
		}
		results = append(results, res)
		for _, p := range bad {
			r.conflicts[p] = conflictRecord{entry: dirty[p], commit: res.commit, err: res.err}
		}
	}
	for p := range r.pending {
		keep[p] = true
	}
	var sets []*changeSet
	for _, cs := range r.chain {
		if bad := clash(cs.changes); len(bad) > 0 {
			res, err := r.pushConflict(ctx, u, uTree, cs, bad)
			if err != nil {
				return nil, err
			}
			results = append(results, res)
			continue
		}
		sets = append(sets, cs)
	}

	// 2. Rebuild the commits on u and move the working tree to the result:
	// once, or once per commit when Regenerate must see its files.
	head, tree := u, uTree
	var replayed []*changeSet
	for _, cs := range sets {
		plain := map[string]entry{}
		derived := map[string]entry{}
		for p, e := range cs.changes {
			if r.isDerived(p) {
				derived[p] = e
			} else {
				plain[p] = e
			}
		}
		t1, err := updateTree(r.sto, tree, plain)
		if err != nil {
			return nil, err
		}
		if r.opts.Regenerate != nil {
			if err := r.moveTo(t1, keep); err != nil {
				return nil, err
			}
			if err := r.regenerate(); err != nil {
				return nil, err
			}
			derived = map[string]entry{}
			for _, p := range r.opts.Derived {
				e, err := r.workEntry(p, true)
				if err != nil {
					return nil, err
				}
				derived[p] = e
			}
		}
		t2, err := updateTree(r.sto, t1, derived)
		if err != nil {
			return nil, err
		}
		if r.opts.Regenerate != nil {
			dkeep := map[string]bool{}
			for p := range keep {
				dkeep[p] = true
			}
			for _, p := range r.opts.Derived {
				dkeep[p] = true
			}
			if err := r.moveTo(t2, dkeep); err != nil {
				return nil, err
			}
		}
		if t2 == tree {
			continue // already upstream: no empty commit
		}
		c, err := r.writeCommit(t2, head, cs.message, cs.author)
		if err != nil {
			return nil, err
		}
		cs.commit, cs.tree = c, t2
		replayed = append(replayed, cs)
		head, tree = c, t2
	}
	if err := r.moveTo(tree, keep); err != nil {
		return nil, err
	}
	for _, p := range reset {
		if err := r.resetWork(p); err != nil {
			return nil, err
		}
	}
	r.chain = replayed
	r.upstream, r.local = u, head
	r.resync = false
	return results, nil
}
