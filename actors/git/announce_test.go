package git_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/agentos-run/agentos/actors/git"
	gitclient "github.com/agentos-run/agentos/actors/git/client"
	"github.com/agentos-run/agentos/actors/git/gitpb"
	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/actors/registry"
	regclient "github.com/agentos-run/agentos/actors/registry/client"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/vfs"
)

// gitNode is one node's tool root: its repo on the shared upstream, its
// registry actor and its git actor, and the commits the actor announced.
type gitNode struct {
	dir  string
	repo *repo.Repo
	reg  *registry.Registry
	c    *gitclient.Client
	sys  *actor.ActorSystem
	pid  *actor.PID

	mu        sync.Mutex
	committed []*gitpb.Committed
}

func (n *gitNode) announced() []*gitpb.Committed {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.committed)
}

func newUpstream(t *testing.T) string {
	t.Helper()
	up := filepath.Join(t.TempDir(), "upstream.git")
	if err := repo.InitBare(up, "main"); err != nil {
		t.Fatal(err)
	}
	return up
}

// newGitNode hydrates a fresh tool root from up and starts its actors. The
// repo regenerates nothing: the registry learns of pulled tools only
// through the Register messages the git actor sends.
func newGitNode(t *testing.T, up string, syncTimeout time.Duration) *gitNode {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	n := &gitNode{dir: filepath.Join(t.TempDir(), "root")}
	r, err := repo.Hydrate(context.Background(), repo.Options{Dir: n.dir, Upstream: up, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	jail, err := vfs.Open(n.dir)
	if err != nil {
		t.Fatal(err)
	}
	if n.reg, err = registry.Open(jail, registry.Options{Logger: quiet}); err != nil {
		t.Fatal(err)
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	regPID := sys.Root.Spawn(registry.Props(n.reg))
	rc := regclient.New(sys.Root, regPID)
	rc.Timeout = 10 * time.Second
	pid := sys.Root.Spawn(git.Props(git.Options{
		Jail: jail, Repo: r, Registry: rc, SyncTimeout: syncTimeout, RetryPause: 10 * time.Millisecond,
		OnCommitted: func(c *gitpb.Committed) {
			n.mu.Lock()
			n.committed = append(n.committed, c)
			n.mu.Unlock()
		},
	}))
	t.Cleanup(func() {
		_ = sys.Root.StopFuture(pid).Wait()
		_ = sys.Root.PoisonFuture(regPID).Wait()
		sys.Shutdown()
		n.reg.Close()
		r.Close()
		jail.Close()
	})
	n.repo, n.sys, n.pid = r, sys, pid
	n.c = gitclient.New(sys.Root, pid)
	n.c.Timeout = time.Minute
	return n
}

func toolSource(name string) string {
	return fmt.Sprintf("/** Returns %s. */\nexport default function %s() { return %q; }\n", name, strings.ReplaceAll(name, "-", "_"), name)
}

// A write on node A is announced; node B's WaitFor for it waits until the
// announcement is fed to B's git actor, which pulls the commit, registers
// the tool with B's registry actor and answers both.
func TestCommitAnnouncedToAnotherNode(t *testing.T) {
	ctx := context.Background()
	up := newUpstream(t)
	a, b := newGitNode(t, up, 10*time.Second), newGitNode(t, up, 10*time.Second)

	w, err := a.c.WriteFile(ctx, "tools/math/inc.ts", []byte(toolSource("inc")))
	if err != nil {
		t.Fatal(err)
	}
	ann := a.announced()
	if len(ann) != 1 || ann[0].GetCommit() != w.Commit || ann[0].GetBranch() != "main" || !slices.Equal(ann[0].GetPaths(), []string{"tools/math/inc.ts"}) {
		t.Fatalf("A announced %v; want one Committed{%s, main, [tools/math/inc.ts]}", ann, w.Commit)
	}
	// A no-op write publishes nothing, so announces nothing.
	if _, err := a.c.WriteFile(ctx, "tools/math/inc.ts", []byte(toolSource("inc"))); err != nil {
		t.Fatal(err)
	}
	if n := len(a.announced()); n != 1 {
		t.Fatalf("a write that changed nothing was announced (%d announcements)", n)
	}

	type result struct {
		s   gitclient.Synced
		err error
	}
	waited := make(chan result, 1)
	go func() {
		s, err := b.c.WaitFor(ctx, w.Commit, 30*time.Second)
		waited <- result{s, err}
	}()
	// A second, short WaitFor queued behind the first proves B's tree does
	// not include the commit yet (WaitFor fetches nothing by itself).
	if _, err := b.c.WaitFor(ctx, w.Commit, time.Millisecond); !errors.Is(err, gitclient.ErrCommitNotReached) || !strings.Contains(err.Error(), "no announcement of it was applied") {
		t.Fatalf("short WaitFor before the announcement: %v, want ErrCommitNotReached", err)
	}
	select {
	case r := <-waited:
		t.Fatalf("WaitFor returned before the announcement: %+v %v", r.s, r.err)
	default:
	}
	if _, ok := b.reg.Get("tools/math/inc.ts"); ok {
		t.Fatal("B's registry has the tool before the announcement")
	}

	s, err := b.c.Announce(ctx, ann[0].GetCommit(), ann[0].GetBranch())
	if err != nil {
		t.Fatal(err)
	}
	if s.Head != w.Commit || !slices.Equal(s.Changed, []string{"tools/math/inc.ts"}) || !slices.Equal(s.Registered, []string{"tools/math/inc.ts"}) {
		t.Fatalf("Announce = %+v; want head %s, tools/math/inc.ts changed and registered", s, w.Commit)
	}
	if got, _ := os.ReadFile(filepath.Join(b.dir, "tools", "math", "inc.ts")); string(got) != toolSource("inc") {
		t.Fatalf("B's tree: %q", got)
	}
	if tool, ok := b.reg.Get("tools/math/inc.ts"); !ok || tool.Description != "Returns inc." {
		t.Fatalf("B's registry: %+v %v", tool, ok)
	}
	r := <-waited
	if r.err != nil || r.s.Head != w.Commit || r.s.Commit != w.Commit {
		t.Fatalf("WaitFor after the announcement: %+v %v", r.s, r.err)
	}
	// Idempotent: announced again, nothing to pull; WaitFor answers at once.
	if s, err := b.c.Announce(ctx, w.Commit, ""); err != nil || len(s.Changed) != 0 || s.Head != w.Commit {
		t.Fatalf("second Announce: %+v %v", s, err)
	}
	if _, err := b.c.WaitFor(ctx, w.Commit, time.Millisecond); err != nil {
		t.Fatalf("WaitFor of an included commit: %v", err)
	}
	if n := len(b.announced()); n != 0 {
		t.Fatalf("B announced %d commits; a pull that pushed nothing announces nothing", n)
	}
}

// An announcement of a commit the upstream does not hold fails, after the
// bound, saying so; so do malformed ones, another branch, and a node
// without Git.
func TestAnnouncementOfAnUnknownCommitFails(t *testing.T) {
	ctx := context.Background()
	up := newUpstream(t)
	b := newGitNode(t, up, 200*time.Millisecond)
	ghost := strings.Repeat("0123456789", 4)
	_, err := b.c.Announce(ctx, ghost, "main")
	if !errors.Is(err, gitclient.ErrCommitNotReached) || !strings.Contains(err.Error(), ghost) || !strings.Contains(err.Error(), "of pulling from the upstream") || !strings.Contains(err.Error(), "does not hold it") {
		t.Fatalf("unknown commit: %v", err)
	}
	head, _ := b.repo.Head()
	if _, err := b.c.Announce(ctx, head, "other"); !errors.Is(err, gitclient.ErrCommitNotReached) || !strings.Contains(err.Error(), `branch "other"`) {
		t.Fatalf("another branch: %v", err)
	}
	for _, bad := range []string{"", "HEAD", "abc123"} {
		if _, err := b.c.Announce(ctx, bad, ""); !errors.Is(err, gitclient.ErrBadCommit) {
			t.Fatalf("Announce(%q): %v, want ErrBadCommit", bad, err)
		}
		if _, err := b.c.WaitFor(ctx, bad, time.Second); !errors.Is(err, gitclient.ErrBadCommit) {
			t.Fatalf("WaitFor(%q): %v, want ErrBadCommit", bad, err)
		}
	}
	// The upstream goes away: the error says what the pull met.
	must(t, os.Rename(up, up+".away"))
	if _, err := b.c.Announce(ctx, ghost, ""); !errors.Is(err, gitclient.ErrCommitNotReached) || !strings.Contains(err.Error(), "the last pull failed") {
		t.Fatalf("unreachable upstream: %v", err)
	}
	must(t, os.Rename(up+".away", up))

	noGit, _ := start(t)
	if _, err := noGit.Announce(ctx, ghost, ""); !errors.Is(err, gitclient.ErrNoRepo) {
		t.Fatalf("node without Git: %v", err)
	}
	if _, err := noGit.WaitFor(ctx, ghost, 0); !errors.Is(err, gitclient.ErrNoRepo) {
		t.Fatalf("node without Git: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Concurrent writes on two nodes, each node fed the other's announcements:
// both trees and both registries end up with every tool, and each node
// includes every announced commit.
func TestConcurrentWritesOnTwoNodesReachBoth(t *testing.T) {
	ctx := context.Background()
	up := newUpstream(t)
	nodes := []*gitNode{newGitNode(t, up, 10*time.Second), newGitNode(t, up, 10*time.Second)}
	const perNode = 4
	var wg sync.WaitGroup
	errs := make(chan error, 2*perNode)
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range perNode {
				p := fmt.Sprintf("tools/n%d/t%d.ts", i, j)
				if _, err := n.c.WriteFile(ctx, p, []byte(toolSource(fmt.Sprintf("n%d-t%d", i, j)))); err != nil {
					errs <- fmt.Errorf("node %d, %s: %w", i, p, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, n := range nodes {
		other := nodes[1-i]
		anns := other.announced()
		if len(anns) != perNode {
			t.Fatalf("node %d announced %d commits, want %d", 1-i, len(anns), perNode)
		}
		for _, c := range anns {
			if _, err := n.c.Announce(ctx, c.GetCommit(), c.GetBranch()); err != nil {
				t.Fatalf("node %d, announcement of %s: %v", i, c.GetCommit(), err)
			}
		}
	}
	for i, n := range nodes {
		for _, m := range nodes {
			for _, c := range m.announced() {
				if _, err := n.c.WaitFor(ctx, c.GetCommit(), time.Millisecond); err != nil {
					t.Fatalf("node %d does not include %s: %v", i, c.GetCommit(), err)
				}
			}
		}
		for k := range 2 {
			for j := range perNode {
				p := fmt.Sprintf("tools/n%d/t%d.ts", k, j)
				if got, _ := os.ReadFile(filepath.Join(n.dir, filepath.FromSlash(p))); string(got) != toolSource(fmt.Sprintf("n%d-t%d", k, j)) {
					t.Fatalf("node %d lacks %s: %q", i, p, got)
				}
				if _, ok := n.reg.Get(p); !ok {
					t.Fatalf("node %d's registry lacks %s", i, p)
				}
			}
		}
	}
}

// A waiting WaitFor is answered when the actor stops: ErrUnavailable, not
// a hang until the caller's timeout.
func TestWaitersAnsweredWhenTheActorStops(t *testing.T) {
	n := newGitNode(t, newUpstream(t), 10*time.Second)
	f := n.sys.Root.RequestFuture(n.pid, &system.Local{Msg: &gitpb.WaitFor{Commit: strings.Repeat("ab", 20), TimeoutMs: time.Minute.Milliseconds()}}, 2*time.Minute)
	// Queued behind the WaitFor: once answered, the WaitFor is waiting.
	if _, err := n.c.WaitFor(context.Background(), strings.Repeat("cd", 20), time.Millisecond); !errors.Is(err, gitclient.ErrCommitNotReached) {
		t.Fatal(err)
	}
	must(t, n.sys.Root.StopFuture(n.pid).Wait())
	res, err := f.Result()
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := res.(*gitpb.Synced); !ok || s.GetFailure().GetCode() != "unavailable" || !strings.Contains(s.GetFailure().GetMessage(), "stopped before") {
		t.Fatalf("WaitFor when the actor stops: %v, want failure unavailable", res)
	}
}

// An Announce whose first pull fails (the upstream is away) keeps pulling,
// with the actor serving other requests in between, and succeeds once the
// upstream is back within the bound.
func TestAnnounceRetriesUntilTheUpstreamAnswers(t *testing.T) {
	ctx := context.Background()
	up := newUpstream(t)
	a, b := newGitNode(t, up, 30*time.Second), newGitNode(t, up, 30*time.Second)
	w, err := a.c.WriteFile(ctx, "tools/r.ts", []byte(toolSource("r")))
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.Rename(up, up+".away"))
	f := b.sys.Root.RequestFuture(b.pid, &system.Local{Msg: &gitpb.Announce{Commit: w.Commit}}, time.Minute)
	// Queued behind the Announce: answered while the Announce waits, so
	// its first pull has run, and failed.
	if _, err := b.c.WaitFor(ctx, w.Commit, time.Millisecond); !errors.Is(err, gitclient.ErrCommitNotReached) {
		t.Fatalf("WaitFor while the upstream is away: %v", err)
	}
	must(t, os.Rename(up+".away", up))
	res, err := f.Result()
	if err != nil {
		t.Fatal(err)
	}
	s, ok := res.(*gitpb.Synced)
	if !ok || s.GetFailure() != nil || s.GetHead() != w.Commit || !slices.Equal(s.GetRegistered(), []string{"tools/r.ts"}) {
		t.Fatalf("Announce after the upstream came back: %v", res)
	}
	if _, ok := b.reg.Get("tools/r.ts"); !ok {
		t.Fatal("B's registry lacks the tool")
	}
}

// A write on B whose push is rebased on A's commit brings that commit in:
// a WaitFor for it is answered, and A's tool is registered on B, with no
// announcement.
func TestARebasedWriteReleasesWaitersAndRegisters(t *testing.T) {
	ctx := context.Background()
	up := newUpstream(t)
	a, b := newGitNode(t, up, 30*time.Second), newGitNode(t, up, 30*time.Second)
	w, err := a.c.WriteFile(ctx, "tools/from-a.ts", []byte(toolSource("from-a")))
	if err != nil {
		t.Fatal(err)
	}
	f := b.sys.Root.RequestFuture(b.pid, &system.Local{Msg: &gitpb.WaitFor{Commit: w.Commit, TimeoutMs: time.Minute.Milliseconds()}}, 2*time.Minute)
	if _, err := b.c.WriteFile(ctx, "tools/from-b.ts", []byte(toolSource("from-b"))); err != nil {
		t.Fatal(err)
	}
	res, err := f.Result()
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := res.(*gitpb.Synced); !ok || s.GetFailure() != nil {
		t.Fatalf("WaitFor after B's rebased write: %v", res)
	}
	if _, ok := b.reg.Get("tools/from-a.ts"); !ok {
		t.Fatal("the tool B's write was rebased on is not registered on B")
	}
	if anns := b.announced(); len(anns) != 1 || !slices.Equal(anns[0].GetPaths(), []string{"tools/from-b.ts"}) {
		t.Fatalf("B announced %v; want its own write only", anns)
	}
}

// Pull catches a node up with commits it was never announced (it was down
// when they were published): the tree and the registry include them.
func TestPullCatchesUpWithoutAnnouncement(t *testing.T) {
	ctx := context.Background()
	up := newUpstream(t)
	a, b := newGitNode(t, up, time.Second), newGitNode(t, up, time.Second)
	w, err := a.c.WriteFile(ctx, "tools/missed.ts", []byte(toolSource("missed")))
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := b.repo.Contains(w.Commit); ok {
		t.Fatal("setup: b has the commit already")
	}
	s, err := b.c.Pull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Head != w.Commit || !slices.Contains(s.Changed, "tools/missed.ts") || !slices.Contains(s.Registered, "tools/missed.ts") {
		t.Fatalf("Pull = %+v, want head %s with tools/missed.ts registered", s, w.Commit)
	}
	if _, ok := b.reg.Get("tools/missed.ts"); !ok {
		t.Fatal("b's registry lacks the pulled tool")
	}
	noGit, _ := start(t)
	if _, err := noGit.Pull(ctx); !errors.Is(err, gitclient.ErrNoRepo) {
		t.Fatalf("Pull without Git: %v", err)
	}
}

// Issue 24: a forge's write carries its run and fencing token to the
// commit (WriteFenced). The paused holder's write (token 1) after the new
// holder's (token 2) is refused across the actor's wire as repo.ErrFenced:
// nothing reaches the upstream, and the paused node's tool root and
// registry keep the new holder's tool.
func TestStaleFencedWriteRefusedThroughTheActor(t *testing.T) {
	ctx := context.Background()
	up := newUpstream(t)
	stale, fresh := newGitNode(t, up, 10*time.Second), newGitNode(t, up, 10*time.Second)
	newer := toolSource("new-holder")
	w, err := fresh.c.WriteFenced(ctx, "tools/x.ts", []byte(newer), "run-1", 2)
	if err != nil {
		t.Fatal(err)
	}
	head, err := fresh.repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	if head != w.Commit {
		t.Fatalf("upstream head %s, want the write's commit %s", head, w.Commit)
	}
	_, err = stale.c.WriteFenced(ctx, "tools/x.ts", []byte(toolSource("stale-holder")), "run-1", 1)
	if !errors.Is(err, repo.ErrFenced) {
		t.Fatalf("the stale holder's write: %v, want repo.ErrFenced", err)
	}
	if h, _ := stale.repo.Head(); h != head {
		t.Fatalf("the stale node's head %s, want the upstream's %s (nothing pushed)", h, head)
	}
	if got, _ := os.ReadFile(filepath.Join(stale.dir, "tools", "x.ts")); string(got) != newer {
		t.Fatalf("the stale node's tool root holds %q, want the new holder's tool", got)
	}
	if tool, ok := stale.reg.Get("tools/x.ts"); !ok || !strings.Contains(tool.Description, "new-holder") {
		t.Fatalf("the stale node's registry describes %+v, want the new holder's tool", tool)
	}
}
