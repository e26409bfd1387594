package repo

// Rebasing the local work (unpushed commits, files not yet persisted) onto
// a new upstream head: rebaseOnto and its phases.

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
	// fenced: the change set was dropped, never pushed (err nil): the
	// upstream holds a commit of its forge run with a greater fencing
	// token (fence.go).
	fenced bool
}

// rebase is the state of one rebaseOnto, shared by its phases.
type rebase struct {
	u, uTree plumbing.Hash
	// theirs are the upstream's changes since our base (path -> entry,
	// absent entry = deleted).
	theirs map[string]entry
	// pending are the uncommitted changes (r.pending) with their working
	// content.
	pending map[string]entry
	// dirty are the working files the update would overwrite or delete that
	// no longer hold r.files' content (a tool wrote them and has not
	// persisted them yet).
	dirty map[string]entry
	// keep are the working files moving the working tree must not touch.
	keep map[string]bool
	// reset are the paths pushed to a conflict branch whose working file
	// then takes the upstream's version.
	reset []string
	// results are the conflicts pushed, in order.
	results []conflictResult
	// sets are the change sets of r.chain that replay cleanly.
	sets []*changeSet
}

// rebaseOnto rebuilds the unpushed commits (r.chain) and the uncommitted
// changes (r.pending) on top of the upstream commit u: the working tree is
// reset to u, each commit's files are re-applied, Regenerate rebuilds the
// derived files, and the commit is made again. A commit that changed a path
// the upstream also changed, to different content, is not replayed: it is
// pushed to a conflict branch and reported. On return r.upstream = u.
//
// The phases, in order:
//  1. newRebase: what the upstream changed since our base;
//  2. findLocalChanges: the pending and the unpersisted working files;
//  3. conflicts, published before anything local changes: pending files
//     (conflictPending), unpersisted files (conflictDirty), and commits
//     (conflictChain, which leaves the change sets that replay cleanly);
//  4. replay: the clean change sets rebuilt on u;
//  5. finishRebase: the working tree moved to the result, the state saved
//     in r.
func (r *Repo) rebaseOnto(ctx context.Context, u plumbing.Hash) ([]conflictResult, error) {
	if u == r.upstream {
		return nil, nil // the chain is already based on u
	}
	return r.rebaseOn(ctx, u)
}

// rebaseOn is rebaseOnto also when u is our base (to drop the fenced-out
// change sets, see fence.go).
func (r *Repo) rebaseOn(ctx context.Context, u plumbing.Hash) ([]conflictResult, error) {
	r.resync = true
	rb, err := r.newRebase(u)
	if err != nil {
		return nil, err
	}
	if err := r.findLocalChanges(rb); err != nil {
		return nil, err
	}
	if err := r.conflictPending(ctx, rb); err != nil {
		return nil, err
	}
	if err := r.conflictDirty(ctx, rb); err != nil {
		return nil, err
	}
	for p := range r.pending {
		rb.keep[p] = true
	}
	if err := r.conflictChain(ctx, rb); err != nil {
		return nil, err
	}
	head, tree, replayed, err := r.replay(rb)
	if err != nil {
		return nil, err
	}
	if err := r.finishRebase(rb, head, tree, replayed); err != nil {
		return nil, err
	}
	return rb.results, nil
}

// newRebase reads what the upstream changed between our base (r.upstream)
// and u.
func (r *Repo) newRebase(u plumbing.Hash) (*rebase, error) {
	baseTree, err := r.commitTree(r.upstream)
	if err != nil {
		return nil, err
	}
	uTree, err := r.commitTree(u)
	if err != nil {
		return nil, err
	}
	rb := &rebase{u: u, uTree: uTree, theirs: map[string]entry{}, pending: map[string]entry{}, dirty: map[string]entry{}, keep: map[string]bool{}}
	if err := diffTrees(r.sto, baseTree, uTree, func(p string, _, to entry) { rb.theirs[p] = to }); err != nil {
		return nil, err
	}
	return rb, nil
}

// clash lists (sorted) the paths of changes the upstream also changed, to
// different content. Derived files never clash: they are regenerated.
func (r *Repo) clash(rb *rebase, changes map[string]entry) []string {
	var bad []string
	for p, ours := range changes {
		if t, changed := rb.theirs[p]; changed && t != ours && !r.isDerived(p) {
			bad = append(bad, p)
		}
	}
	sort.Strings(bad)
	return bad
}

// findLocalChanges reads the working content of the pending paths
// (rb.pending) and finds the unpersisted working files the update would
// overwrite or delete (rb.dirty, kept in the working tree): candidates are
// the paths that differ between the working tree's tree and u, and those
// of the unpushed commits.
func (r *Repo) findLocalChanges(rb *rebase) error {
	for _, p := range sortedKeys(r.pending) {
		e, err := r.workEntry(p, true)
		if err != nil {
			return err
		}
		rb.pending[p] = e
	}
	candidates, err := r.updatedPaths(rb.uTree)
	if err != nil {
		return err
	}
	for _, p := range candidates {
		if r.pending[p] || !r.guarded(p) || !safeTreePath(p) || r.ignored(p) {
			continue
		}
		e, changed, err := r.workDirty(p, r.files[p])
		if err != nil {
			return err
		}
		if changed {
			rb.dirty[p] = e
			rb.keep[p] = true
		}
	}
	return nil
}

// updatedPaths lists, sorted, the paths an update to the tree uTree may
// write: those that differ between r.tree and uTree, and those the
// unpushed commits change.
func (r *Repo) updatedPaths(uTree plumbing.Hash) ([]string, error) {
	candidates := map[string]bool{}
	if err := diffTrees(r.sto, r.tree, uTree, func(p string, _, _ entry) { candidates[p] = true }); err != nil {
		return nil, err
	}
	for _, cs := range r.chain {
		for p := range cs.changes {
			candidates[p] = true
		}
	}
	return sortedKeys(candidates), nil
}

// conflictPending handles the pending files that clash with the upstream.
// Direct: their version is pushed to a conflict branch and the working
// file takes the upstream's (no longer pending). PR: the working tree keeps
// the local version (still pending); it is pushed for review unless a
// proposal already holds it.
func (r *Repo) conflictPending(ctx context.Context, rb *rebase) error {
	bad := r.clash(rb, rb.pending)
	if len(bad) == 0 {
		return nil
	}
	if r.opts.Strategy != PR {
		for _, p := range bad {
			delete(r.pending, p)
			rb.reset = append(rb.reset, p)
		}
		return r.addConflict(ctx, rb, "uncommitted changes to", bad, rb.pending)
	}
	var fresh []string
	for _, p := range bad {
		if !r.proposed(p, rb.pending[p]) {
			fresh = append(fresh, p)
		}
	}
	if len(fresh) == 0 {
		r.log.Warn("git: the upstream changed files this node had proposed; the working tree keeps the proposed version", slog.Any("paths", bad))
		return nil
	}
	return r.addConflict(ctx, rb, "uncommitted changes to", fresh, rb.pending)
}

// conflictDirty handles the unpersisted working files that clash with the
// upstream (Direct only): written by a tool that has not persisted them
// yet, their version is pushed to a conflict branch now, the working tree
// keeps them, and the tool's Persist of them reports the conflict
// (r.conflicts, see takeConflicts).
func (r *Repo) conflictDirty(ctx context.Context, rb *rebase) error {
	if r.opts.Strategy == PR {
		return nil
	}
	bad := r.clash(rb, rb.dirty)
	if len(bad) == 0 {
		return nil
	}
	if err := r.addConflict(ctx, rb, "unpersisted changes to", bad, rb.dirty); err != nil {
		return err
	}
	res := rb.results[len(rb.results)-1]
	for _, p := range bad {
		r.conflicts[p] = conflictRecord{entry: rb.dirty[p], commit: res.commit, err: res.err}
	}
	return nil
}

// addConflict pushes the entries of paths (taken from changes) to a
// conflict branch (conflictOf) and records the result.
func (r *Repo) addConflict(ctx context.Context, rb *rebase, what string, paths []string, changes map[string]entry) error {
	res, err := r.conflictOf(ctx, rb.u, rb.uTree, what, paths, changes)
	if err != nil {
		return err
	}
	rb.results = append(rb.results, res)
	return nil
}

// conflictChain drops each unpushed commit a newer holder of its forge run
// fenced out (its paths take the upstream's version), pushes each one that
// clashes with the upstream to a conflict branch; the others (rb.sets) are
// replayed.
func (r *Repo) conflictChain(ctx context.Context, rb *rebase) error {
	for _, cs := range r.chain {
		if r.fencedOut(rb.u, cs) {
			rb.results = append(rb.results, conflictResult{set: cs, fenced: true})
			for p := range cs.changes {
				rb.reset = append(rb.reset, p)
			}
			continue
		}
		bad := r.clash(rb, cs.changes)
		if len(bad) == 0 {
			rb.sets = append(rb.sets, cs)
			continue
		}
		res, err := r.pushConflict(ctx, rb.u, rb.uTree, cs, bad)
		if err != nil {
			return err
		}
		rb.results = append(rb.results, res)
	}
	return nil
}

// replay rebuilds the change sets rb.sets on u, one commit each (none for a
// change set the upstream already holds), and returns the new head, its
// tree and the change sets replayed (their commit and tree updated).
func (r *Repo) replay(rb *rebase) (head, tree plumbing.Hash, replayed []*changeSet, err error) {
	head, tree = rb.u, rb.uTree
	for _, cs := range rb.sets {
		t, err := r.replayTree(tree, cs.changes, rb.keep)
		if err != nil {
			return head, tree, nil, err
		}
		if t == tree {
			continue // already upstream: no empty commit
		}
		c, err := r.writeCommit(t, head, cs.message, cs.author)
		if err != nil {
			return head, tree, nil, err
		}
		cs.commit, cs.tree = c, t
		replayed = append(replayed, cs)
		head, tree = c, t
	}
	return head, tree, replayed, nil
}

// replayTree applies changes to tree. Without Regenerate the change set's
// own derived files are applied with the others. With Regenerate the
// working tree is moved to the result first (keeping keep), Regenerate
// rebuilds the derived files from it, and their new content is applied:
// the working tree then holds the returned tree.
func (r *Repo) replayTree(tree plumbing.Hash, changes map[string]entry, keep map[string]bool) (plumbing.Hash, error) {
	plain, derived := r.splitDerived(changes)
	t1, err := updateTree(r.sto, tree, plain)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if r.opts.Regenerate == nil {
		return updateTree(r.sto, t1, derived)
	}
	if derived, err = r.regenerateAt(t1, keep); err != nil {
		return plumbing.ZeroHash, err
	}
	t2, err := updateTree(r.sto, t1, derived)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	dkeep := make(map[string]bool, len(keep)+len(r.opts.Derived))
	for p := range keep {
		dkeep[p] = true
	}
	for _, p := range r.opts.Derived {
		dkeep[p] = true
	}
	return t2, r.moveTo(t2, dkeep)
}

// splitDerived separates the derived files of changes from the others.
func (r *Repo) splitDerived(changes map[string]entry) (plain, derived map[string]entry) {
	plain, derived = map[string]entry{}, map[string]entry{}
	for p, e := range changes {
		if r.isDerived(p) {
			derived[p] = e
		} else {
			plain[p] = e
		}
	}
	return plain, derived
}

// regenerateAt moves the working tree to tree (keeping keep), runs
// Regenerate and reads the derived files it wrote.
func (r *Repo) regenerateAt(tree plumbing.Hash, keep map[string]bool) (map[string]entry, error) {
	if err := r.moveTo(tree, keep); err != nil {
		return nil, err
	}
	if err := r.regenerate(); err != nil {
		return nil, err
	}
	derived := map[string]entry{}
	for _, p := range r.opts.Derived {
		e, err := r.workEntry(p, true)
		if err != nil {
			return nil, err
		}
		derived[p] = e
	}
	return derived, nil
}

// finishRebase moves the working tree to tree (keeping rb.keep), gives
// the paths pushed to a conflict branch the upstream's version, and records
// the new state: r.chain = replayed, r.upstream = u, r.local = head.
func (r *Repo) finishRebase(rb *rebase, head, tree plumbing.Hash, replayed []*changeSet) error {
	if err := r.moveTo(tree, rb.keep); err != nil {
		return err
	}
	for _, p := range rb.reset {
		if err := r.resetWork(p); err != nil {
			return err
		}
	}
	r.chain = replayed
	r.upstream, r.local = rb.u, head
	r.resync = false
	return nil
}
