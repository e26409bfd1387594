package repo

// Pull and Contains: what a node does when another node announces a commit
// (the git actor's Announce and WaitFor).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Pulled says what Pull brought into the tool root.
type Pulled struct {
	// From and Head are the tool root's branch head before and after.
	From, Head string
	// Changed are the paths Pull added or modified in the working tree,
	// Deleted those it removed (both sorted; derived files included).
	Changed, Deleted []string
	// Published is the head Pull pushed when the tool root held local
	// commits left unpushed (Direct strategy): a commit the other nodes
	// have not heard of. "" when it pushed nothing.
	Published string
}

// Pull brings the running tool root up to its upstream's branch: the sync
// Hydrate runs (fetch; local work not yet upstream rebased on it, a write
// not persisted yet never overwritten; commits left unpushed pushed in
// Direct mode; Regenerate), without recovering files a writer left unsaved
// (their writer may still persist them). It is what a node does when
// another node announces a commit. It returns what changed in the working
// tree, so that the caller can register the changed tools.
//
// Errors wrap ErrUpstream (the upstream cannot be reached: the tool root
// is left as it was), ErrClosed, or what Hydrate's do. A damaged object
// store is repaired from the upstream, as Persist does.
func (r *Repo) Pull(ctx context.Context) (_ Pulled, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return Pulled{}, ErrClosed
	}
	defer func() {
		if errors.Is(err, ErrInternal) {
			r.resync = true
		}
	}()
	defer recoverInto(&err, r.log, "pulling into "+r.opts.Dir)
	unlock, err := r.lockRoot(ctx)
	if err != nil {
		return Pulled{}, err
	}
	defer unlock()
	defer r.remember()
	r.refresh()
	from := r.localHead()
	fromTree, err := r.commitTree(from)
	if err != nil {
		fromTree = plumbing.ZeroHash // unreadable: everything counts as changed
	}
	r.published = plumbing.ZeroHash
	err = r.sync(ctx)
	if damaged(err) && ctx.Err() == nil {
		err = r.repair(ctx, err)
	}
	if err != nil {
		return Pulled{From: from.String()}, err
	}
	out := Pulled{From: from.String(), Head: r.local.String()}
	if !r.published.IsZero() {
		out.Published = r.published.String()
		r.published = plumbing.ZeroHash
	}
	if out.Changed, out.Deleted, err = changedPaths(r.sto, fromTree, r.tree); err != nil {
		return out, fmt.Errorf("repo: listing what the pull changed: %w", err)
	}
	if from != r.local {
		r.log.Info("git: pulled", slog.String("from", short(from)), slog.String("head", short(r.local)), slog.Int("changed", len(out.Changed)), slog.Int("deleted", len(out.Deleted)))
	}
	return out, nil
}

// Contains reports whether the tool root's branch includes commit (a full
// 40-digit hexadecimal hash): it is the head or one of its ancestors. It
// reads only local objects (no fetch, no lock on the tool root): a commit
// this tool root never fetched is not included. Errors wrap ErrPath (not a
// commit hash) or ErrClosed.
func (r *Repo) Contains(commit string) (_ bool, err error) {
	h, ok := parseHash(commit)
	if !ok {
		return false, fmt.Errorf("%w: %q is not a commit hash (40 hexadecimal digits)", ErrPath, clipText(commit))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false, ErrClosed
	}
	defer recoverInto(&err, r.log, "looking for commit "+commit)
	head := r.localHead()
	if head == h {
		return true, nil
	}
	if head.IsZero() || r.sto.HasEncodedObject(h) != nil {
		r.missingBeyond(h)
		return false, nil // never fetched here
	}
	return r.isAncestor(h, head)
}

// isAncestor says whether h is an ancestor of head, breadth-first over
// every parent (an upstream may hold merges), bounded like every history
// walk of this package. A shallow boundary on the way asks the next fetch
// for the full history.
func (r *Repo) isAncestor(h, head plumbing.Hash) (bool, error) {
	seen := map[plumbing.Hash]bool{head: true}
	queue := []plumbing.Hash{head}
	for n := 0; len(queue) > 0 && n < maxWalk; n++ {
		c, err := object.GetCommit(r.sto, queue[0])
		queue = queue[1:]
		if err != nil {
			return false, fmt.Errorf("repo: reading the history of %s: %w", short(head), err)
		}
		if r.isShallow(c.Hash) {
			// The history beyond was never fetched: the next Pull
			// fetches it, and a later Contains finds h there if it is.
			r.fullFetch = true
			continue
		}
		for _, p := range c.ParentHashes {
			if p == h {
				return true, nil
			}
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return false, nil
}

// localHead is the local branch's head: r.local, or the ref on disk when
// the state in memory may disagree with it (r.resync: the refs on disk
// are the truth).
func (r *Repo) localHead() plumbing.Hash {
	if r.resync {
		return r.readRef(r.branchRef)
	}
	return r.local
}

// changedPaths lists the paths whose entry differs between the trees a
// and b: changed (present in b) and deleted, both sorted.
func changedPaths(s storer.EncodedObjectStorer, a, b plumbing.Hash) (changed, deleted []string, err error) {
	err = diffTrees(s, a, b, func(p string, _, to entry) {
		if to.absent() {
			deleted = append(deleted, p)
		} else {
			changed = append(changed, p)
		}
	})
	sort.Strings(changed)
	sort.Strings(deleted)
	return changed, deleted, err
}

// Branch returns the shared branch the tool root follows.
func (r *Repo) Branch() string { return r.opts.Branch }

func parseHash(s string) (plumbing.Hash, bool) {
	if len(s) != 40 || strings.Trim(strings.ToLower(s), "0123456789abcdef") != "" {
		return plumbing.ZeroHash, false
	}
	return plumbing.NewHash(strings.ToLower(s)), true
}

func clipText(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// Diff lists the paths whose content differs between the trees of the
// commits from and to (full hashes; from "" is the empty tree): changed
// are present in to (added or modified), deleted are not; both sorted. It
// reads local objects only. A caller that registers tools keeps the head
// it last registered and asks Diff(that, Head()) after any operation, since
// a Persist whose push was rejected brings in the other writers' commits
// too. Errors wrap ErrPath (not a hash) or ErrClosed.
func (r *Repo) Diff(from, to string) (changed, deleted []string, err error) {
	var hs [2]plumbing.Hash
	for i, s := range []string{from, to} {
		if s == "" && i == 0 {
			continue
		}
		h, ok := parseHash(s)
		if !ok {
			return nil, nil, fmt.Errorf("%w: %q is not a commit hash (40 hexadecimal digits)", ErrPath, clipText(s))
		}
		hs[i] = h
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, nil, ErrClosed
	}
	defer recoverInto(&err, r.log, "comparing "+from+" and "+to)
	var trees [2]plumbing.Hash
	for i, h := range hs {
		if trees[i], err = r.commitTree(h); err != nil {
			return nil, nil, err
		}
	}
	return changedPaths(r.sto, trees[0], trees[1])
}

// Parent returns the first parent of commit (40 hexadecimal digits), ""
// for a root commit. Reading one commit object, it costs the same whatever
// the size of the trees (unlike Diff).
func (r *Repo) Parent(commit string) (parent string, err error) {
	h, ok := parseHash(commit)
	if !ok {
		return "", fmt.Errorf("%w: %q is not a commit hash (40 hexadecimal digits)", ErrPath, clipText(commit))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return "", ErrClosed
	}
	defer recoverInto(&err, r.log, "reading commit "+commit)
	c, err := object.GetCommit(r.sto, h)
	if err != nil {
		return "", fmt.Errorf("commit %s: %w", h, err)
	}
	if len(c.ParentHashes) == 0 {
		return "", nil
	}
	return c.ParentHashes[0].String(), nil
}
