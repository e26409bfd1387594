package repo

// Pushing the unpushed commits to the upstream branch, rebasing and
// retrying when another writer moved it.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// publish pushes r.local to the upstream branch, rebasing on rejection.
//
// A local upstream (path, file://) is written in turns: publish holds an
// exclusive flock on the upstream's refs/ directory from the first push to
// the last, so writers using this package never reject each other there
// (the receive-pack's own flock, on the repository directory, still guards
// every reference update). Over HTTPS there is no such lock: rejected
// pushes are retried after a random pause growing from 1-4 ms to 1-20 ms.
func (r *Repo) publish(ctx context.Context) (attempts int, results []conflictResult, err error) {
	unlock, err := r.lockUpstream(ctx)
	if err != nil {
		return 0, nil, err
	}
	defer unlock()
	for attempts = 1; ; attempts++ {
		if r.staleInChain(r.upstream) {
			// A commit of a forge run whose newer holder's commit the
			// upstream already has: dropped before it is pushed.
			res, err := r.rebaseOn(ctx, r.upstream)
			if err != nil {
				return attempts, results, err
			}
			results = append(results, res...)
			if r.local == r.upstream {
				return attempts, results, nil
			}
		}
		objs, err := r.chainObjects()
		if err != nil {
			return attempts, results, err
		}
		perr := r.push(ctx, r.branchRef, r.upstream, r.local, objs)
		if perr == nil {
			r.upstream = r.local
			r.chain = nil
			return attempts, results, nil
		}
		u, err := r.retryOn(ctx, attempts, perr)
		if err != nil {
			return attempts, results, err
		}
		res, err := r.rebaseOnto(ctx, u)
		if err != nil {
			return attempts, results, err
		}
		results = append(results, res...)
		if r.local == r.upstream {
			return attempts, results, nil
		}
	}
}

// lockUpstream takes the flock of a local upstream's refs/ directory (see
// publish); over HTTPS, or when the upstream's git directory cannot be
// found, there is nothing to lock.
func (r *Repo) lockUpstream(ctx context.Context) (unlock func(), err error) {
	if isRemote(r.opts.Upstream) {
		return func() {}, nil
	}
	dir, err := resolveGitDir(r.opts.Upstream)
	if err != nil {
		return func() {}, nil
	}
	return lockDirCtx(ctx, filepath.Join(dir, "refs"))
}

// retryOn decides what follows the rejected push attempt number attempts
// (perr): the upstream head to rebase on and push again, or the error
// that ends publish (attempts exhausted, or the upstream failed rather
// than moved).
func (r *Repo) retryOn(ctx context.Context, attempts int, perr error) (plumbing.Hash, error) {
	if attempts >= r.opts.Retries {
		return plumbing.ZeroHash, fmt.Errorf("%w: %d attempts, other writers kept moving %s; the commit is kept locally and pushed by the next Persist or Hydrate; raise Options.Retries if this is frequent",
			ErrRejected, attempts, r.opts.Branch)
	}
	// Pause before fetching, not after: the fresher the fetch, the
	// smaller the window in which another writer can move the branch.
	if errors.Is(perr, errStale) {
		if err := sleep(ctx, jitter(attempts)); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	u, ferr := r.fetch(ctx)
	if ferr != nil || u == r.upstream || u.IsZero() {
		// Not a race with another writer: the upstream failed.
		return plumbing.ZeroHash, fmt.Errorf("%w (the commit is kept locally and pushed by the next Persist or Hydrate)", perr)
	}
	return u, nil
}

// jitter is the random pause before push attempt n+1: 1 ms up to a bound
// growing from 4 to 20 ms.
func jitter(n int) time.Duration {
	return time.Duration(1+rand.IntN(min(20, 2*n+2))) * time.Millisecond
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// chainObjects lists the objects of the unpushed commits.
func (r *Repo) chainObjects() ([]plumbing.Hash, error) {
	set := map[plumbing.Hash]bool{}
	prev, err := r.commitTree(r.upstream)
	if err != nil {
		return nil, err
	}
	for _, cs := range r.chain {
		set[cs.commit] = true
		if err := newObjects(r.sto, prev, cs.tree, set); err != nil {
			return nil, err
		}
		prev = cs.tree
	}
	out := make([]plumbing.Hash, 0, len(set))
	for h := range set {
		out = append(out, h)
	}
	return out, nil
}
