package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	pb "github.com/agentos-run/agentos/actors/executor/executorpb"
	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/transpile"
	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/agentos-run/agentos/actors/system"
)

// ActorOptions configure the executor actor (Props).
type ActorOptions struct {
	// Journal records the runs that ask for it (Run.record); nil: runs are
	// never recorded. The actor does not own it.
	Journal *journal.Journal
	// Authority verifies the caller's token of every run that carries one
	// (the kernel's, kernel.Kernel.Authority); nil: such runs are refused
	// with ErrNoAuthority.
	Authority *capability.Authority
	// RequireCaller refuses a Run without a caller (ErrNoCaller) instead
	// of running it with no caller restriction. IMPORTANT: a node whose
	// executor actor may be reached by senders it does not trust (another
	// node) MUST set it; the node package does.
	RequireCaller bool
	// OnRefused is told every capability check a run's caller fails (a file,
	// a require, a driver call), from the run's goroutine; nil: none is
	// reported. The node logs them as kernel "refused" events.
	OnRefused func(Refusal)
	// Charge charges a run's caller (the process pid, living on the node
	// at home, "" for this one) for the driver calls that cost quota: each
	// mcp call is one capability.ToolCalls, as a kernel tool call is (see
	// chargeDrivers). nil: such calls are not charged. The node's sends a
	// Charge message to the kernel actor of the caller's home node.
	Charge func(ctx context.Context, home string, pid uint64, m capability.Meter, amount float64) error
	// AdmitModule judges a module a gated run loads that its approval gate
	// did not judge with the entry (Run.gate_modules; entry is the run's
	// tool): nil lets it run, an error refuses the require. nil: every
	// such module is refused (this node cannot judge it).
	AdmitModule func(entry string, m journal.Module, src []byte) error
	// AdmitRemote judges a Run that came from another node (not a
	// system.Local) as this node's approval gate judges exec_tool here:
	// path is the run's tool (tools/x.ts, or a recorded version
	// tools/x.ts@<hash>), token its caller's. An error refuses the run
	// (the version needs an approval it lacks); otherwise the run executes
	// exactly the content Admitted.Hash names (when set) and, when
	// Admitted.Gated, judges every module it loads beyond Admitted.Modules
	// through AdmitModule. IMPORTANT: a node with an approval gate MUST set
	// it, or a member holding a caller's exec token runs an unapproved
	// high-risk tool by sending Run here directly. nil: remote runs are not
	// judged (no gate).
	AdmitRemote func(ctx context.Context, path, token string) (Admitted, error)
}

// Admitted is what an approval gate cleared a remote run for
// (ActorOptions.AdmitRemote): the entry's content hash ("" when nothing was
// judged), the modules judged with it (path@hash), and whether the modules
// it loads beyond them are judged as they load.
type Admitted struct {
	Hash    string
	Modules []string
	Gated   bool
}

// tombstones bounds how many Cancels of runs that have not arrived (or
// ended already) the actor remembers.
const tombstones = 1024

// Props returns the props of an executor actor running tools on ex. The
// actor does not own ex: whoever created it closes it, after stopping the
// actor.
//
// Runs execute on their own goroutines, so the actor's mailbox never waits
// for a tool; a restart of the actor (its supervisor's decision after a
// panic) leaves the runs in flight untouched. Stopping the actor cancels
// them and waits for their replies.
func Props(ex *Executor, opts ActorOptions) *actor.Props {
	s := &actorState{ex: ex, opts: opts, runs: map[string]context.CancelFunc{}, dead: map[string]bool{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return actor.PropsFromProducer(func() actor.Actor { return &execActor{s: s} })
}

// actorState outlives restarts of the actor.
type actorState struct {
	ex     *Executor
	opts   ActorOptions
	ctx    context.Context // cancelled when the actor stops for good
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	runs map[string]context.CancelFunc // the runs in flight, by run key
	dead map[string]bool               // cancelled run keys with no run in flight
	fifo []string                      // dead's keys, oldest first
}

type execActor struct{ s *actorState }

// Receive is the executor actor's one message switch. A Run from another
// node (not in a system.Local) MUST carry its caller, whose token grants
// exec on the tool (remoteRun); its token is then verified and its grants
// applied as for every caller. A Cancel needs no token: its run key,
// random and known only to the run's sender, names the run.
func (a *execActor) Receive(ctx actor.Context) {
	msg, local := system.Unwrap(ctx.Message())
	switch m := msg.(type) {
	case *pb.Run:
		if !local {
			if err := remoteRun(m); err != nil {
				ctx.Respond(&pb.Ran{Failure: failureOf(err)})
				return
			}
		}
		a.onRun(ctx, m, !local)
	case *pb.Cancel:
		a.onCancel(ctx, m)
	case *pb.Replay:
		if !local {
			ctx.Respond(&pb.Replayed{Failure: failureOf(fmt.Errorf("%w: a Replay of run %s came from outside this node: replays are local only", system.ErrUnauthenticated, m.GetRunId()))})
			return
		}
		a.onReplay(ctx, m)
	case *runPanicked:
		panic(fmt.Sprintf("executor: a run panicked: %v", m.value))
	case *actor.Stopping:
		a.onStopping()
	case *actor.Started, *actor.Stopped, *actor.Restarting:
	default:
		ctx.Logger().Warn("executor: unknown message", slog.String("type", fmt.Sprintf("%T", m)))
	}
}

// remoteRun checks a Run from another node: it names its caller, whose
// token grants exec on the tool, as exec_tool checks locally. Errors wrap
// system.ErrUnauthenticated or capability.ErrDenied.
func remoteRun(m *pb.Run) error {
	c := m.GetCaller()
	if c == nil || c.GetToken() == "" {
		return fmt.Errorf("%w: a Run of %s came from outside this node without its caller: every run placed from another node MUST carry its caller's token (execclient.RunRequest.Caller)", system.ErrUnauthenticated, m.GetPath())
	}
	tok, err := capability.Decode(c.GetToken())
	if err != nil {
		return fmt.Errorf("%w: a Run of %s: the caller's token: %w", system.ErrUnauthenticated, m.GetPath(), err)
	}
	entry, _, _ := strings.Cut(m.GetPath(), "@") // tools/x.ts@<hash>: a recorded version of tools/x.ts
	if !capability.GrantsCover(tok.Grants, capability.Exec, entry) {
		return fmt.Errorf("%w: a Run of %s from another node: the token of %s grants no exec on it", capability.ErrDenied, m.GetPath(), tok.Holder)
	}
	return nil
}

// admitRemote has the approval gate judge a remote Run and returns it to
// run as cleared: its content hash and the modules judged with it (a
// caller's own Hash for other content is stale).
func (s *actorState) admitRemote(ctx context.Context, m *pb.Run) (*pb.Run, error) {
	adm, err := s.opts.AdmitRemote(ctx, m.GetPath(), m.GetCaller().GetToken())
	if err != nil {
		return nil, fmt.Errorf("a Run of %s from another node was judged by this node's approval gate: %w", m.GetPath(), err)
	}
	if adm.Hash == "" {
		return m, nil
	}
	if want := m.GetHash(); want != "" && want != adm.Hash {
		return nil, fmt.Errorf("%w: %s was judged here as %s, the caller asked for %s", execclient.ErrStaleTool, m.GetPath(), adm.Hash, want)
	}
	m = proto.CloneOf(m)
	m.Hash, m.GateModules, m.Judged = adm.Hash, adm.Gated, adm.Modules
	return m, nil
}

// onRun registers the run under its key (so that a Cancel processed after
// this finds it) and starts it on its own goroutine; the reply goes
// straight to the sender from there.
func (a *execActor) onRun(ctx actor.Context, m *pb.Run, remote bool) {
	sender, self, sys := ctx.Sender(), ctx.Self(), ctx.ActorSystem()
	if sender == nil {
		ctx.Logger().Warn("executor: Run without a sender; use execclient.Client")
		return
	}
	s := a.s
	// The run continues the sender's trace (its span context travels in
	// the message's headers, also from another node).
	runCtx, stop, cancelled, err := s.keyedContext(ctx, m.GetRunKey())
	switch {
	case err != nil:
		ctx.Respond(&pb.Ran{Failure: failureOf(err)})
		return
	case cancelled:
		// The Cancel crossed the Run: the run never starts.
		res := execclient.Result{Logs: []string{}, Result: []byte("null"), Error: &Error{Kind: sandbox.KindCancelled, Message: "the run was cancelled before it started"}}
		ctx.Respond(ranOf(res, ""))
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer stop()
		defer s.forget(m.GetRunKey())
		ran, panicked := s.run(runCtx, m, remote)
		if panicked != nil {
			sys.Root.Send(self, &runPanicked{value: panicked})
		}
		sys.Root.Send(sender, ran)
	}()
}

// keyedContext is the context of a run or replay sent with key (its
// Cancel's handle; "" for none), continuing the sender's trace, and claims
// key for it. It is already cancelled (and cancelled is true) when a
// Cancel of key came first; err wraps ErrRunKeyInUse when another run
// holds key.
func (s *actorState) keyedContext(ctx actor.Context, key string) (runCtx context.Context, stop context.CancelFunc, cancelled bool, err error) {
	runCtx, stop = context.WithCancel(system.TraceContext(s.ctx, ctx))
	if key == "" {
		return runCtx, stop, false, nil
	}
	busy, cancelled := s.claim(key, stop)
	if busy || cancelled {
		stop()
	}
	if busy {
		return nil, nil, false, fmt.Errorf("%w: %q; choose a unique run key (execclient.NewRunKey)", execclient.ErrRunKeyInUse, key)
	}
	return runCtx, stop, cancelled, nil
}

// claim registers a run's key with its cancel, unless a run with that key
// is in flight (busy) or its Cancel came first (cancelled).
func (s *actorState) claim(key string, stop context.CancelFunc) (busy, cancelled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, busy = s.runs[key]
	cancelled = s.dead[key]
	if !busy && !cancelled {
		s.runs[key] = stop
	}
	return busy, cancelled
}

// forget drops a finished run's key.
func (s *actorState) forget(key string) {
	if key == "" {
		return
	}
	s.mu.Lock()
	delete(s.runs, key)
	s.mu.Unlock()
}

// onCancel cancels the run in flight named by the key, or remembers the key
// so that its Run, if it comes later, never starts. The reply, to a sender
// that awaits one, says the run's context is cancelled.
func (a *execActor) onCancel(ctx actor.Context, m *pb.Cancel) {
	s, key := a.s, m.GetRunKey()
	found := false
	if key != "" {
		s.mu.Lock()
		var cancel context.CancelFunc
		if cancel, found = s.runs[key]; found {
			cancel()
		} else if !s.dead[key] {
			s.dead[key] = true
			s.fifo = append(s.fifo, key)
			if len(s.fifo) > tombstones {
				delete(s.dead, s.fifo[0])
				s.fifo = s.fifo[1:]
			}
		}
		s.mu.Unlock()
	}
	if ctx.Sender() != nil {
		ctx.Respond(&pb.Cancelled{RunKey: key, Found: found})
	}
}

// run verifies m's caller (and, for a remote run, has the approval gate
// judge it), runs m and turns a panic into an internal error for the
// caller.
func (s *actorState) run(ctx context.Context, m *pb.Run, remote bool) (ran *pb.Ran, panicked any) {
	defer func() {
		if v := recover(); v != nil {
			panicked = v
			ran = ranOf(execclient.Result{Error: &Error{Kind: sandbox.KindInternal, Message: fmt.Sprintf("the executor panicked while running %s: %v (a bug in agentos: please report it with this stack)\n%s", m.GetPath(), v, debug.Stack())}}, "")
		}
	}()
	overlay, err := s.overlayOf(m, remote)
	if err != nil {
		return &pb.Ran{Failure: failureOf(err)}, nil
	}
	if remote && s.opts.AdmitRemote != nil {
		if m, err = s.admitRemote(ctx, m); err != nil {
			return &pb.Ran{Failure: failureOf(err)}, nil
		}
	}
	req := Request{Path: m.GetPath(), Args: m.GetArgs(), Limits: limitsFromPB(m.GetLimits()), Overlay: overlay}
	// tools/x.ts@<hash>: the recorded version, from this node's journal
	// (also when the run itself is not recorded).
	if xerr := ResolveVersion(s.opts.Journal, &req); xerr != nil {
		return ranOf(execclient.Result{Result: json.RawMessage("null"), Logs: []string{}, Error: xerr}, ""), nil
	}
	if err := s.holdToVersion(m, &req, remote); err != nil {
		return &pb.Ran{Failure: failureOf(err)}, nil
	}
	if err := s.bindCaller(m, &req); err != nil {
		return &pb.Ran{Failure: failureOf(err)}, nil
	}
	if m.GetGateModules() {
		req.AdmitModule = s.admitModules(m.GetPath(), m.GetJudged())
	}
	j := s.opts.Journal
	if !m.GetRecord() {
		j = nil
	}
	res, id, err, panicked := record(ctx, s.ex, j, req)
	if err != nil {
		return &pb.Ran{Failure: failureOf(fmt.Errorf("%w: %w", execclient.ErrJournal, err))}, panicked
	}
	return ranOf(res, id), panicked
}

// holdToVersion holds req to the version of the tool m's caller was
// cleared for (the approval gate's; m.Hash, when set): a recorded version
// (tools/x.ts@<hash>) runs only if it is that one; otherwise the tool here
// must be, and req carries the source whose hash was checked.
func (s *actorState) holdToVersion(m *pb.Run, req *Request, remote bool) error {
	want := m.GetHash()
	if want == "" {
		return nil
	}
	if req.version != "" {
		if req.version != want {
			return fmt.Errorf("%w: %s names version %s, the caller asked for %s", execclient.ErrStaleTool, m.GetPath(), req.version, want)
		}
		return nil
	}
	src, have, err := s.sourceOf(m, remote)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s is not here (%v), the caller asked for %s", execclient.ErrStaleTool, m.GetPath(), err, want)
	case have != want:
		return fmt.Errorf("%w: %s is %s here, the caller asked for %s", execclient.ErrStaleTool, m.GetPath(), have, want)
	}
	// IMPORTANT: run exactly the bytes whose hash was checked; reading
	// the file again (record, exec) could run a version written in
	// between, one the caller (the approval gate) never cleared.
	req.Source = src
	return nil
}

// sourceOf is the entry's source the run is held to, and its hash: the
// bytes m carries (the caller's one read, pb.Run.source) when a sender on
// this node sent them, else the file here. IMPORTANT: another node's
// bytes are never run: a remote run is held to this node's own file.
func (s *actorState) sourceOf(m *pb.Run, remote bool) ([]byte, string, error) {
	if src := m.GetSource(); src != nil && !remote {
		return src, transpile.Hash(src), nil
	}
	return s.ex.Source(m.GetPath())
}

// bindCaller makes req run for m's caller, with its rights; a run without
// one is refused when ActorOptions.RequireCaller is set.
func (s *actorState) bindCaller(m *pb.Run, req *Request) error {
	if c := m.GetCaller(); c != nil {
		return s.asCaller(req, c)
	}
	if s.opts.RequireCaller {
		return fmt.Errorf("%w: %s was sent without the process it runs for; send Run with its caller (execclient.RunRequest.Caller)", execclient.ErrNoCaller, m.GetPath())
	}
	return nil
}

// admitModules is the Request.AdmitModule of a gated run of entry whose
// gate judged the modules judged (path@hash): a judged module runs; any
// other is judged by ActorOptions.AdmitModule as it loads, or refused
// when there is none.
func (s *actorState) admitModules(entry string, judged []string) func(journal.Module, []byte) error {
	return func(mod journal.Module, src []byte) error {
		if slices.Contains(judged, mod.Path+"@"+mod.Hash) {
			return nil
		}
		if s.opts.AdmitModule == nil {
			return driver.Errorf(driver.CodeSecurity, "require of %s: refused: the approval gate did not judge it with %s, and this node cannot judge a module as it loads (executor.ActorOptions.AdmitModule); require it with a string literal so that the gate judges it with the tool", mod.Path, entry)
		}
		return s.opts.AdmitModule(entry, mod, src)
	}
}

// asCaller verifies the caller's token and gives req exactly the caller's
// rights: its files and requires (Request.Rights) and its driver calls
// (fetch, sql, llm), checked on every call against the token, live; and
// the caller journaled with the run, so that recovery resumes it under the
// same grants.
func (s *actorState) asCaller(req *Request, c *pb.Caller) error {
	if s.opts.Authority == nil {
		return fmt.Errorf("%w: start it with executor.ActorOptions.Authority (the kernel's)", execclient.ErrNoAuthority)
	}
	held, err := s.opts.Authority.HoldEncoded(c.GetToken())
	if err != nil {
		return fmt.Errorf("the token of %s: %w", c.GetHolder(), err)
	}
	tok := held.Token()
	r := tokenRights{held: held, caller: execclient.Caller{PID: c.GetPid(), Name: c.GetName(), Holder: c.GetHolder()}, onRefused: s.opts.OnRefused}
	req.Rights = r
	req.Middleware = append(req.Middleware, checkDrivers(r.check))
	if s.opts.Charge != nil {
		home, pid := c.GetHome(), c.GetPid()
		req.Middleware = append(req.Middleware, chargeDrivers(func(ctx context.Context, m capability.Meter, amount float64) error {
			return s.opts.Charge(ctx, home, pid, m, amount)
		}))
	}
	jc := &journal.Caller{Process: c.GetName(), Grants: tok.Grants}
	if jc.Process == "" {
		jc.Process = fmt.Sprint(c.GetPid())
	}
	if jc.Grants == nil {
		jc.Grants = []capability.Grant{}
	}
	req.Caller = jc
	return nil
}

// onStopping cancels every run in flight and waits for their replies.
func (a *execActor) onStopping() {
	a.s.cancel()
	a.s.wg.Wait()
}
