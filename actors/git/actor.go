package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	gitclient "github.com/agentos-run/agentos/actors/git/client"
	pb "github.com/agentos-run/agentos/actors/git/gitpb"
	"github.com/agentos-run/agentos/actors/git/repo"
	regclient "github.com/agentos-run/agentos/actors/registry/client"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/governance/gate"
	"github.com/agentos-run/agentos/transpile"
	"github.com/agentos-run/agentos/vfs"
)

// Options configure the git actor.
type Options struct {
	// Jail is the tool root (REQUIRED).
	Jail *vfs.Jail
	// Repo persists every write (commit and push, or a review branch). nil:
	// writes stay in the working tree.
	Repo *repo.Repo
	// Registry is the client of the registry actor. When set, every written
	// file is sent to it (Register) after it is written and before it is
	// committed, so that meta.json goes in the same commit. A file that is
	// not a tool (regclient.ErrNotTool: data files, tests) is written and
	// not registered; any other registration error fails the write. nil:
	// nothing is registered. IMPORTANT: the registry actor MUST NOT send
	// to the git actor (the git actor waits for its reply).
	Registry *regclient.Client
	// PersistTimeout bounds one persist (commit, push, retries), and one
	// pull. Default 1 min.
	PersistTimeout time.Duration
	// OnCommitted, when set, is called with every commit this actor pushed
	// to the shared branch: after each write that published (not a no-op,
	// not a review or conflict branch), and after a pull that pushed local
	// commits left unpushed. The cluster publishes it to the other nodes,
	// which send their git actor an Announce of it (Client.Announce).
	// IMPORTANT: it runs on the actor's goroutine: it MUST NOT block or
	// send to this git actor; hand the message to a publisher and return.
	OnCommitted func(*pb.Committed)
	// SyncTimeout bounds how long an Announce keeps pulling for a commit
	// that is not upstream yet, and is a WaitFor's default timeout.
	// Default gitclient.DefaultSyncTimeout (30 s).
	SyncTimeout time.Duration
	// RetryPause is the first pause between two pulls for an announced
	// commit not upstream yet; it doubles up to 2 s. Default 100 ms.
	RetryPause time.Duration
	// Gate, when set, is the registration gate (docs/GOVERNANCE.md):
	// before a write that changes an existing tool source (gate.Applies)
	// and compiles, the recorded runs of the previous version (or, when
	// that version never ran, of the newest earlier version that did) are
	// replayed against the new one. IMPORTANT: it runs before the file is
	// written, registered or committed, so that a report that is Blocked
	// (policy block) refuses the write with nothing changed; otherwise
	// the report goes with the reply (gitclient.Written.Gate). It runs off the
	// actor's goroutine (its verdict comes back as a message, gatewrite.go):
	// the actor keeps serving pulls, announces and waits meanwhile, and
	// the writes sent after the gated one wait for it, in order (bounded
	// by the gate's replay timeouts and PersistTimeout). IMPORTANT: Check
	// MUST be safe for concurrent use with the node's other work, and MUST
	// NOT send to this git actor.
	Gate Gater
	// Authority verifies the token a request carries (the node's: the
	// kernel's capability.Authority). nil: a request with a token is
	// refused, and only the node's own requests (system.Local) are served.
	Authority *capability.Authority
	// NodeOnly are directories of the tool root (besides PersonasDir) that
	// only the node itself writes: a write from a process or another node
	// is refused there whatever its token grants (Protected). The node
	// passes its configured personas directory.
	NodeOnly []string
}

// Gater checks a new version of a tool against the recorded runs of the
// previous one: *gate.Gate.
type Gater interface {
	Check(ctx context.Context, path string, old, new []byte) gate.Report
}

// Props returns the props of a git actor.
func Props(opts Options) *actor.Props {
	if opts.PersistTimeout <= 0 {
		opts.PersistTimeout = time.Minute
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = gitclient.DefaultSyncTimeout
	}
	if opts.RetryPause <= 0 {
		opts.RetryPause = 100 * time.Millisecond
	}
	return actor.PropsFromProducer(func() actor.Actor { return &gitActor{opts: opts} })
}

type gitActor struct {
	opts Options
	// waiters are the Announce and WaitFor requests whose commit the tool
	// root does not include yet (see announce.go). Lost on a restart:
	// their callers' requests time out.
	waiters []*waiter
	timer   *time.Timer
	// pause is the current pause between pulls for announced commits;
	// nextPull when the next one may run.
	pause    time.Duration
	nextPull time.Time
	// known is the head whose tree the registry was last brought up to
	// (catchUp): what a pull, or a write's rebase on other writers'
	// commits, brings in is registered from there.
	known  string
	logger *slog.Logger // the actor system's, from Started
	// gating is the write whose gate check runs (nil: none); queue holds
	// the writes sent after it, in order (gatewrite.go).
	gating     *pendingWrite
	gateCancel context.CancelFunc
	queue      []*pendingWrite
}

func (a *gitActor) log() *slog.Logger {
	if a.logger == nil {
		return slog.Default()
	}
	return a.logger
}

// Receive is the git actor's one message switch.
//
// Every request is authenticated first (auth.go): the node's own arrive in
// a system.Local; a request that carries a token acts for its holder; any
// other is refused with "unauthenticated" and nothing is done.
func (a *gitActor) Receive(ctx actor.Context) {
	msg, local := system.Unwrap(ctx.Message())
	switch m := msg.(type) {
	case *pb.WriteFile:
		if err := a.authorizeWrite("write", m.GetPath(), local, m.GetToken()); err != nil {
			ctx.Respond(&pb.Written{Path: m.GetPath(), Failure: gitclient.FailureOf(err)})
			return
		}
		a.onWrite(ctx, m)
	case *pb.PatchFile:
		if err := a.authorizeWrite("patch", m.GetPath(), local, m.GetToken()); err != nil {
			ctx.Respond(&pb.Written{Path: m.GetPath(), Failure: gitclient.FailureOf(err)})
			return
		}
		a.onPatch(ctx, m)
	case *pb.Announce:
		if err := a.authorizeSync("Announce of "+m.GetCommit(), local, m.GetToken()); err != nil {
			ctx.Respond(&pb.Synced{Commit: m.GetCommit(), Failure: gitclient.FailureOf(err)})
			return
		}
		a.onAnnounce(ctx, m)
	case *pb.WaitFor:
		if err := a.authorizeSync("WaitFor of "+m.GetCommit(), local, m.GetToken()); err != nil {
			ctx.Respond(&pb.Synced{Commit: m.GetCommit(), Failure: gitclient.FailureOf(err)})
			return
		}
		a.onWaitFor(ctx, m)
	case *pb.Pull:
		if err := a.authorizeSync("Pull", local, m.GetToken()); err != nil {
			ctx.Respond(&pb.Synced{Failure: gitclient.FailureOf(err)})
			return
		}
		a.onPull(ctx)
	case *gated:
		a.onGated(ctx, m)
	case *tick:
		a.onTick(ctx)
	case *actor.Stopping, *actor.Restarting:
		a.stop(ctx)
	case *actor.Started:
		a.logger = ctx.Logger()
		if a.opts.Repo != nil {
			a.known, _ = a.opts.Repo.Head() // the registry was built from this tree
		}
	case *actor.Stopped:
	default:
		ctx.Logger().Warn("git: unknown message", slog.String("type", fmt.Sprintf("%T", m)))
	}
}

// onWrite writes a file (gated first when it changes a tool source); the
// reply, Written, may come after messages received later (gatewrite.go).
func (a *gitActor) onWrite(ctx actor.Context, m *pb.WriteFile) { a.enqueue(ctx, m) }

// onPatch replaces the first match of a text in a file, and writes it as
// onWrite does.
func (a *gitActor) onPatch(ctx actor.Context, m *pb.PatchFile) { a.enqueue(ctx, m) }

// planWrite reads what a WriteFile changes.
func (a *gitActor) planWrite(m *pb.WriteFile) (writePlan, *pb.Written) {
	p := m.GetPath()
	var old []byte
	if a.opts.Gate != nil && gate.IsTool(p) {
		// The previous version, for the gate (a tool source is small).
		if b, err := a.opts.Jail.ReadFile(p); err == nil {
			old = b
		}
	}
	_, err := a.opts.Jail.Stat(p)
	pl := writePlan{p: p, old: old, content: m.GetContent(), created: errors.Is(err, vfs.ErrNotFound), verb: "write"}
	if run := m.GetFenceRun(); run != "" && m.GetFence() > 0 {
		// A forge's commit: it carries its run and fencing token, and a
		// stale one never reaches the upstream (repo.FenceTrailer).
		pl.trailer = repo.FenceTrailer(run, m.GetFence())
	}
	return pl, nil
}

// planPatch reads the file a PatchFile changes and applies the patch.
func (a *gitActor) planPatch(m *pb.PatchFile) (writePlan, *pb.Written) {
	p, search, replace := m.GetPath(), m.GetSearch(), m.GetReplace()
	if search == "" {
		return writePlan{}, &pb.Written{Path: p, Failure: gitclient.FailureOf(fmt.Errorf("%w: %s needs the text to replace; to rewrite the whole file use write_file", gitclient.ErrEmptySearch, p))}
	}
	old, err := a.opts.Jail.ReadFile(p)
	if err != nil {
		return writePlan{}, &pb.Written{Path: p, Failure: gitclient.FailureOf(err)}
	}
	i := bytes.Index(old, []byte(search))
	if i < 0 {
		return writePlan{}, &pb.Written{Path: p, Failure: gitclient.FailureOf(fmt.Errorf("%w: %s does not contain the search text (%d bytes); read the file again and copy the text exactly, whitespace included", gitclient.ErrSearchNotFound, p, len(search)))}
	}
	next := make([]byte, 0, len(old)-len(search)+len(replace))
	next = append(next, old[:i]...)
	next = append(next, replace...)
	next = append(next, old[i+len(search):]...)
	return writePlan{p: p, old: old, content: next, verb: "patch"}, nil
}

// onAnnounce answers at once when the tool root includes the commit;
// otherwise it pulls, and the request waits (announce.go) until a pull
// brings the commit or Options.SyncTimeout passes.
func (a *gitActor) onAnnounce(ctx actor.Context, m *pb.Announce) {
	c := m.GetCommit()
	ok, fail := a.check(c)
	if fail != nil {
		ctx.Respond(fail)
		return
	}
	if b := m.GetBranch(); b != "" && b != a.opts.Repo.Branch() {
		ctx.Respond(&pb.Synced{Commit: c, Head: a.head(), Failure: gitclient.FailureOf(fmt.Errorf("%w: commit %s was pushed to branch %q, and this node follows %q: every node of a cluster MUST use the same git.branch", gitclient.ErrCommitNotReached, c, b, a.opts.Repo.Branch()))})
		return
	}
	if ok {
		ctx.Respond(&pb.Synced{Commit: c, Head: a.head()})
		return
	}
	a.waiters = append(a.waiters, &waiter{to: ctx.Sender(), deadline: time.Now().Add(a.opts.SyncTimeout), announce: true, reply: &pb.Synced{Commit: c}})
	if a.pause == 0 {
		a.pause = a.opts.RetryPause
	}
	a.pull(ctx)
	a.schedule(ctx)
}

// onPull pulls once, registers what entered the tool root, and answers
// the waiters that pull satisfied too.
func (a *gitActor) onPull(ctx actor.Context) {
	if a.opts.Repo == nil {
		ctx.Respond(&pb.Synced{Failure: gitclient.FailureOf(fmt.Errorf("%w: there is no upstream to pull from", gitclient.ErrNoRepo))})
		return
	}
	pctx, cancel := context.WithTimeout(context.Background(), a.opts.PersistTimeout)
	res, err := a.opts.Repo.Pull(pctx)
	cancel()
	if err != nil {
		ctx.Respond(&pb.Synced{Head: a.head(), Failure: gitclient.FailureOf(fmt.Errorf("git: pulling from the upstream: %w", err))})
		return
	}
	changed, deleted, registered, rerr := a.catchUp("")
	if res.Published != "" {
		a.committed(res.Published, nil)
	}
	reply := &pb.Synced{Head: a.head(), Changed: changed, Deleted: deleted, Registered: registered}
	if rerr != nil {
		reply.Failure = gitclient.FailureOf(rerr)
	}
	ctx.Respond(reply)
	a.resolve(ctx)
}

// onWaitFor answers at once when the tool root includes the commit;
// otherwise the request waits (announce.go) until an Announce or a write
// brings it, or its timeout passes.
func (a *gitActor) onWaitFor(ctx actor.Context, m *pb.WaitFor) {
	c := m.GetCommit()
	ok, fail := a.check(c)
	switch {
	case fail != nil:
		ctx.Respond(fail)
		return
	case ok:
		ctx.Respond(&pb.Synced{Commit: c, Head: a.head()})
		return
	}
	d := time.Duration(m.GetTimeoutMs()) * time.Millisecond
	if d <= 0 {
		d = a.opts.SyncTimeout
	}
	a.waiters = append(a.waiters, &waiter{to: ctx.Sender(), deadline: time.Now().Add(min(d, maxWait)), reply: &pb.Synced{Commit: c}})
	a.schedule(ctx)
}

// persist writes the file, has the registry actor register it, and
// persists it; report is the gate's (JSON), nil when the write was not
// gated. IMPORTANT: with a Repo, a tool source that does not compile is
// written to the working tree only: never registered, committed or pushed
// to the shared upstream, until a later write makes it compile.
func (a *gitActor) persist(pl writePlan, report []byte) *pb.Written {
	p, content, created, verb, trailer := pl.p, pl.content, pl.created, pl.verb, pl.trailer
	if a.opts.Repo != nil {
		// Checked: a crash before Persist commits it lets the next start
		// recover exactly this content, and nothing written by hand.
		if err := a.opts.Repo.Intend(p, content); err != nil {
			return &pb.Written{Path: p, Gate: report, Failure: gitclient.FailureOf(err)}
		}
	}
	if err := a.opts.Jail.WriteFile(p, content); err != nil {
		return &pb.Written{Path: p, Gate: report, Failure: gitclient.FailureOf(err)}
	}
	w := &pb.Written{Path: p, Bytes: int64(len(content)), Hash: transpile.Hash(content), Created: created, Gate: report}
	if a.opts.Repo != nil {
		if err := Compiles(p, content); err != nil {
			w.Held = true
			w.Failure = gitclient.FailureOf(fmt.Errorf("%w; it was written locally only and is not persisted or shared until it compiles: fix it with write_file or patch_file", err))
			return w
		}
	}
	if a.opts.Registry != nil {
		// Data files and tests are written, not registered.
		if _, err := a.opts.Registry.Register(context.Background(), p, content); err != nil && !errors.Is(err, regclient.ErrNotTool) {
			w.Failure = gitclient.FailureOf(fmt.Errorf("%s was written but not registered: %w", p, err))
			return w
		}
	}
	if a.opts.Repo == nil {
		return w
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.opts.PersistTimeout)
	defer cancel()
	res, err := a.opts.Repo.Persist(ctx, []string{p}, fmt.Sprintf("%s %s", verb, p)+trailer)
	w.Commit, w.Branch, w.PrUrl = res.Commit, res.Branch, res.PRURL
	// A push rejected by another writer's is rebased on its commits: their
	// tools are registered here too, as a pull's are.
	if err == nil && a.ownCommitOnly(res.Commit) {
		a.known = res.Commit // nothing but this write entered the tool root
	} else {
		_, _, _, _ = a.catchUp(p)
	}
	if errors.Is(err, repo.ErrFenced) {
		// The tool root took the newer holder's version back: the
		// registry describes it, not the dropped one.
		_, _ = a.register([]string{p})
	}
	if err != nil {
		w.Failure = gitclient.FailureOf(fmt.Errorf("%s: %w", p, err))
		return w
	}
	if res.Attempts > 0 && res.Branch == a.opts.Repo.Branch() {
		a.committed(res.Commit, []string{p})
	}
	return w
}

// ownCommitOnly says whether commit, which a write's Persist just made, is
// the head and sits right on the head the registry was last brought up to:
// then nothing but that write (its file, registered already, and the
// registry's own files) entered the tool root, and the diff of two whole
// trees that catchUp would make is skipped (its cost grows with the size
// of the directories the write touched).
func (a *gitActor) ownCommitOnly(commit string) bool {
	head, err := a.opts.Repo.Head()
	if err != nil || head != commit || a.known == "" {
		return false
	}
	parent, err := a.opts.Repo.Parent(commit)
	return err == nil && parent == a.known
}

// Compiles returns nil when content at path is not a tool source (.ts or .js)
// or when it transpiles; otherwise an error wrapping gitclient.ErrNotCompiled
// with esbuild's line:column diagnostics. It is what decides that a write stays
// local (and the repo's Options.Hold for files a crash left unsaved).
func Compiles(p string, content []byte) error {
	switch path.Ext(p) {
	case ".ts", ".js":
	default:
		return nil
	}
	if _, err := transpile.Default().Transpile(p, content); err != nil {
		return fmt.Errorf("%w: %v", gitclient.ErrNotCompiled, err)
	}
	return nil
}
