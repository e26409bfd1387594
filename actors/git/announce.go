package git

// Commits across nodes: the Committed hook after a push, and the Announce
// and WaitFor requests, answered once the tool root includes their commit.
// A request whose commit is not there yet waits in a.waiters; a timer
// (tick) pulls again for announced commits, with a growing pause, and
// fails each waiter at its deadline. The actor keeps serving writes in
// between.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	gitclient "github.com/agentos-run/agentos/actors/git/client"
	pb "github.com/agentos-run/agentos/actors/git/gitpb"
	"github.com/agentos-run/agentos/actors/git/repo"
	regclient "github.com/agentos-run/agentos/actors/registry/client"
)

// maxWait caps a WaitFor's timeout_ms.
const maxWait = 10 * time.Minute

// maxPause caps the pause between two pulls for an announced commit.
const maxPause = 2 * time.Second

// waiter is an Announce or WaitFor not answered yet.
type waiter struct {
	to       *actor.PID // nil: sent without a sender, nobody to answer
	deadline time.Time
	announce bool
	reply    *pb.Synced
	lastErr  error // what the last pull met (Announce)
}

// tick wakes the actor to pull again or to fail waiters at their deadline.
// It is local: sent by the actor's own timer, never across nodes.
type tick struct{}

// committed tells Options.OnCommitted of a commit pushed to the shared
// branch.
func (a *gitActor) committed(commit string, paths []string) {
	if a.opts.OnCommitted == nil || commit == "" {
		return
	}
	a.opts.OnCommitted(&pb.Committed{Commit: commit, Branch: a.opts.Repo.Branch(), Paths: paths})
}

// check answers whether the tool root includes commit; a non-nil reply is
// a failure to send at once.
func (a *gitActor) check(commit string) (bool, *pb.Synced) {
	if a.opts.Repo == nil {
		return false, &pb.Synced{Commit: commit, Failure: gitclient.FailureOf(fmt.Errorf("%w: commit %s cannot be waited for; configure git.upstream on every node of the cluster", gitclient.ErrNoRepo, clip(commit)))}
	}
	ok, err := a.opts.Repo.Contains(commit)
	switch {
	case errors.Is(err, repo.ErrPath):
		return false, &pb.Synced{Commit: commit, Failure: gitclient.FailureOf(fmt.Errorf("%w: %q: announce the full hash of a commit (40 hexadecimal digits)", gitclient.ErrBadCommit, clip(commit)))}
	case err != nil:
		return false, &pb.Synced{Commit: commit, Failure: gitclient.FailureOf(err)}
	}
	return ok, nil
}

func (a *gitActor) head() string {
	h, _ := a.opts.Repo.Head()
	return h
}

func (a *gitActor) onTick(ctx actor.Context) {
	if a.announcing() && !time.Now().Before(a.nextPull) {
		a.pull(ctx)
	} else {
		a.resolve(ctx)
	}
	a.schedule(ctx)
}

func (a *gitActor) announcing() bool {
	for _, w := range a.waiters {
		if w.announce {
			return true
		}
	}
	return false
}

// pull brings the tool root up to the upstream, registers what changed,
// and answers the waiters it satisfied.
func (a *gitActor) pull(ctx actor.Context) {
	pctx, cancel := context.WithTimeout(context.Background(), a.opts.PersistTimeout)
	res, err := a.opts.Repo.Pull(pctx)
	cancel()
	a.nextPull = time.Now().Add(a.pause)
	a.pause = min(2*a.pause, maxPause)
	if err != nil {
		ctx.Logger().Warn("git: pulling an announced commit", slog.String("err", err.Error()))
		for _, w := range a.waiters {
			if w.announce {
				w.lastErr = err
			}
		}
		a.resolve(ctx)
		return
	}
	changed, deleted, registered, rerr := a.catchUp("")
	for _, w := range a.waiters {
		if !w.announce {
			continue
		}
		w.lastErr = rerr
		w.reply.Changed = append(w.reply.Changed, changed...)
		w.reply.Deleted = append(w.reply.Deleted, deleted...)
		w.reply.Registered = append(w.reply.Registered, registered...)
	}
	if res.Published != "" {
		a.committed(res.Published, nil)
	}
	a.resolve(ctx)
}

// catchUp registers what entered the tool root's branch since a.known
// (pulled, or rebased on by a write), except skip (a write's own file,
// registered already), and moves a.known to the head.
func (a *gitActor) catchUp(skip string) (changed, deleted, registered []string, err error) {
	head, err := a.opts.Repo.Head()
	if err != nil || head == a.known {
		return nil, nil, nil, err
	}
	changed, deleted, err = a.opts.Repo.Diff(a.known, head)
	if err != nil {
		a.log().Warn("git: listing what entered the tool root", slog.String("from", a.known), slog.String("head", head), slog.String("err", err.Error()))
		return nil, nil, nil, err
	}
	a.known = head
	todo := changed
	if skip != "" {
		todo = slices.DeleteFunc(slices.Clone(changed), func(p string) bool { return p == skip })
	}
	registered, err = a.register(todo)
	if err != nil {
		a.log().Warn("git: registering the tools that entered the tool root", slog.String("err", err.Error()))
	}
	if len(deleted) > 0 && a.opts.Registry != nil {
		a.log().Info("git: files were removed upstream; the registry drops their tools at its next rebuild", slog.Any("paths", deleted))
	}
	return changed, deleted, registered, err
}

// register sends Register to the registry actor for every changed file, as
// a write does: a file that is not a tool is skipped. It returns the tools
// registered and the first other error.
func (a *gitActor) register(paths []string) (registered []string, err error) {
	if a.opts.Registry == nil {
		return nil, nil
	}
	var errs []error
	for _, p := range paths {
		src, rerr := a.opts.Jail.ReadFile(p)
		if rerr != nil {
			errs = append(errs, fmt.Errorf("%s was pulled but cannot be read to register it: %w", p, rerr))
			continue
		}
		if _, rerr := a.opts.Registry.Register(context.Background(), p, src); rerr != nil {
			if !errors.Is(rerr, regclient.ErrNotTool) {
				errs = append(errs, fmt.Errorf("%s was pulled but not registered: %w", p, rerr))
			}
			continue
		}
		registered = append(registered, p)
	}
	if len(errs) > 0 {
		return registered, errs[0]
	}
	return registered, nil
}

// resolve answers every waiter whose commit the tool root now includes,
// and fails those past their deadline.
func (a *gitActor) resolve(ctx actor.Context) {
	if len(a.waiters) == 0 {
		return
	}
	now := time.Now()
	head := a.head()
	keep := a.waiters[:0]
	for _, w := range a.waiters {
		c := w.reply.GetCommit()
		ok, fail := a.check(c)
		switch {
		case fail != nil:
			a.answer(ctx, w, fail)
		case ok:
			w.reply.Head = head
			if w.lastErr != nil { // reached, but a pulled tool was not registered
				w.reply.Failure = gitclient.FailureOf(w.lastErr)
			}
			a.answer(ctx, w, w.reply)
		case !now.Before(w.deadline):
			w.reply.Head = head
			w.reply.Failure = gitclient.FailureOf(a.notReached(w, c, head))
			a.answer(ctx, w, w.reply)
		default:
			keep = append(keep, w)
			continue
		}
	}
	clear(a.waiters[len(keep):])
	a.waiters = keep
	if !a.announcing() {
		a.pause = 0
	}
}

func (a *gitActor) notReached(w *waiter, c, head string) error {
	if !w.announce {
		return fmt.Errorf("%w: %s is not in the tool root (head %s) after the wait: no announcement of it was applied on this node; check that the commit was pushed to %q and announced to this node", gitclient.ErrCommitNotReached, c, clip(head), a.opts.Repo.Branch())
	}
	why := "the upstream's branch does not hold it"
	if w.lastErr != nil {
		why = "the last pull failed: " + w.lastErr.Error()
	}
	return fmt.Errorf("%w: %s is not in the tool root (head %s) after %s of pulling from the upstream: %s; check that it was pushed to %q of this node's git.upstream", gitclient.ErrCommitNotReached, c, clip(head), a.opts.SyncTimeout, why, a.opts.Repo.Branch())
}

func (a *gitActor) answer(ctx actor.Context, w *waiter, reply *pb.Synced) {
	if w.to != nil {
		ctx.Send(w.to, reply)
	}
}

// schedule arms the timer for the next pull or deadline.
func (a *gitActor) schedule(ctx actor.Context) {
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	if len(a.waiters) == 0 {
		return
	}
	next := a.waiters[0].deadline
	for _, w := range a.waiters[1:] {
		if w.deadline.Before(next) {
			next = w.deadline
		}
	}
	if a.announcing() && a.nextPull.Before(next) {
		next = a.nextPull
	}
	sys, self := ctx.ActorSystem(), ctx.Self()
	a.timer = time.AfterFunc(max(time.Until(next), time.Millisecond), func() { sys.Root.Send(self, &tick{}) })
}

// stop fails every waiter: the actor is stopping or restarting.
func (a *gitActor) stop(ctx actor.Context) {
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	for _, w := range a.waiters {
		w.reply.Failure = gitclient.FailureOf(fmt.Errorf("%w: the git actor stopped before the tool root included commit %s", gitclient.ErrUnavailable, w.reply.GetCommit()))
		a.answer(ctx, w, w.reply)
	}
	a.waiters = nil
	a.dropWrites(ctx)
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
