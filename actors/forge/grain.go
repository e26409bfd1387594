package forge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	pb "github.com/agentos-run/agentos/actors/forge/forgepb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/journal"
)

// GrainKind is the cluster kind of forges: one grain per spec, whose
// identity is SpecHash(spec), so that a spec has one activation in the
// whole cluster.
const GrainKind = "forge"

// SpecHash is a forge's identity in a cluster: the hex SHA-256 of spec with
// its surrounding white space trimmed and every run of white space inside
// it folded to one space. Two specs that differ only in white space are one
// forge; any other difference (case included) makes another.
func SpecHash(spec string) string {
	sum := sha256.Sum256([]byte(strings.Join(strings.Fields(spec), " ")))
	return hex.EncodeToString(sum[:])
}

// FailureOf returns the error a forge run m ended with, as its caller was
// told it (errors.Is finds the sentinel its code names: ErrGaveUp,
// capability.ErrDenied...); nil for a run of another kind, or one that did
// not end failed.
func FailureOf(m journal.RunMeta) error {
	if m.Kind != Kind || m.Status != journal.StatusFailed {
		return nil
	}
	var e struct {
		Message string `json:"message"`
		Code    string `json:"code"`
	}
	if json.Unmarshal(m.Error, &e) != nil || e.Message == "" {
		e.Message = "forge run " + m.ID + " failed"
	}
	if e.Code == "" { // recorded before agentos kept the code
		e.Code = system.CodeInternal
	}
	return errorOf(&pb.Failure{Code: e.Code, Message: e.Message})
}

// GrainOptions configure GrainProps.
type GrainOptions struct {
	// Forge is the forge actor of the node that hosts the grain: the grain
	// forges through it (REQUIRED).
	Forge Client
	// Pending finds the unfinished forge run of a spec (identified by its
	// SpecHash) that a dead node left in the shared journal, and claims it
	// for this node: the grain then resumes that run (its recorded model
	// answers are replayed, none is asked again) instead of starting anew.
	// ok false: there is none to resume. nil: nothing is looked for.
	Pending func(ctx context.Context, specHash string) (runID string, ok bool, err error)
	// Finished finds the tool a forge of the spec already made (a finished
	// forge run in the shared journal whose tool is still in the tool
	// root): a new activation of the spec (after a node died, or the
	// cluster changed) answers with it as a reuse instead of forging again,
	// except to the request that caused that forge (request: its key, see
	// forgerun.RequestOf), which is answered the forge's own result. ok false: there
	// is none. nil: nothing is looked for.
	Finished func(ctx context.Context, specHash string) (res Result, request string, ok bool, err error)
	// Failed finds the forge of the spec that the request whose key is
	// request caused, if it ended failed (the shared journal records the
	// request, see forgerun.RequestOf, and the failure, see FailureOf): a request
	// asked again at a new activation (its answer was lost with a node, or
	// with an attempt that timed out) is answered that failure, never
	// forged again. ok false: there is none. nil: nothing is looked for.
	Failed func(ctx context.Context, specHash, request string) (failure error, ok bool, err error)
	// Logger receives the grain's progress (nil: slog.Default()).
	Logger *slog.Logger
	// Authority verifies the caller's token every Run MUST carry (the
	// node's: the kernel's capability.Authority; see authorizeCaller). nil:
	// every Run is refused.
	Authority *capability.Authority
}

// GrainProps returns the props of a forge grain: the activation of one spec
// in a cluster (see GrainKind). It answers forgepb.Run with forgepb.Done.
//
// IMPORTANT: a grain runs at most one forge at a time. A Run that arrives
// while its spec is being forged joins that forge: every caller gets the
// same Done, and the forge works (rights, quota) for the caller whose Run
// started it; the callers that joined are charged nothing. A Cancel from a
// caller takes it off the forge; the forge itself is cancelled (and stays
// resumable) only when its last caller has gone. Once a forge passed, later
// Runs of the activation are answered with its tool as a reuse (score 1),
// without asking the forge again.
//
// A forge that a dead node left unfinished is resumed by the next
// activation of its spec, on whichever node the cluster places it, through
// Pending.
func GrainProps(opts GrainOptions) *actor.Props {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return actor.PropsFromProducer(func() actor.Actor { return &grain{opts: opts} })
}

// grain is one spec's activation.
type grain struct {
	opts   GrainOptions
	flight *flight    // the forge in flight, nil when none
	kept   *pb.Result // the tool of the forge that passed, nil before
	// answered are the Dones sent to the requests (by RunKey) whose forge
	// ended, passed or failed: a retry of one of them (its answer was lost
	// with a node, or sent to an attempt that had timed out) is answered
	// the same Done, never a reuse it did not make nor a second forge.
	// answeredOrder bounds it to maxAnswered keys, oldest forgotten first.
	answered      map[string]*pb.Done
	answeredOrder []string
}

// maxAnswered bounds the requests an activation remembers the answer of
// (a retry comes within seconds; a forgotten one is looked up in the
// journal through Finished and Failed).
const maxAnswered = 1024

// flight is a forge in flight and the callers waiting for it.
type flight struct {
	cancel  context.CancelFunc
	waiters []waiter
	// abandoned: its last caller left, so it was cancelled; Runs that
	// arrive meanwhile wait in queued for the next flight.
	abandoned bool
	queued    []waiter
}

// JoinedLog is the message the grain logs (at Debug) when a caller joins
// the forge in flight: an observable moment for the tests and the
// operator's debug log.
const JoinedLog = "forge grain: a caller joined the forge in flight"

// waiter is a caller waiting for the flight's Done.
type waiter struct {
	sender *actor.PID
	run    *pb.Run
}

// landed is what the flight's goroutine sends the grain when its forge
// ended (local only: it never crosses a node): done for every waiter,
// except the request whose key is origin, answered own (a finished forge
// found in the journal that this request caused).
type landed struct {
	done   *pb.Done
	origin string
	own    *pb.Done
}

// Receive is the grain's one message switch.
func (g *grain) Receive(ctx actor.Context) {
	msg, local := system.Unwrap(ctx.Message())
	switch m := msg.(type) {
	case *pb.Run:
		// A grain is reached from every node of the cluster: a Run MUST
		// carry its caller's token, checked as forge_tool checks it
		// locally (only this node's own may name no caller).
		if err := authorizeCaller(g.opts.Authority, local, m.GetCaller(), "forge grain Run"); err != nil {
			if s := ctx.Sender(); s != nil {
				ctx.Send(s, refused(err))
			}
			return
		}
		g.onRun(ctx, m, ctx.Sender())
	case *pb.Cancel:
		g.onCancel(m)
	case *landed:
		g.onLanded(ctx, m)
	case *actor.Stopping:
		if g.flight != nil {
			g.flight.cancel() // the forge stays resumable
		}
	case *actor.Started, *actor.Stopped, *actor.Restarting:
	default:
		// the cluster's own messages (ClusterInit) and anything else
		g.opts.Logger.Debug("forge grain: message ignored", slog.String("type", fmt.Sprintf("%T", m)))
	}
}

func (g *grain) onRun(ctx actor.Context, m *pb.Run, sender *actor.PID) {
	if sender == nil {
		g.opts.Logger.Warn("forge grain: a Run without a sender; use the cluster's request")
		return
	}
	if d, ok := g.answered[m.GetRunKey()]; ok && m.GetRunKey() != "" {
		ctx.Send(sender, d) // a retry: the same answer, forged or reused
		return
	}
	if g.kept != nil {
		ctx.Send(sender, reuseOf(g.kept))
		return
	}
	w := waiter{sender: sender, run: m}
	switch {
	case g.flight == nil:
		g.start(ctx, []waiter{w})
	case g.flight.abandoned:
		g.flight.queued = joinWaiter(g.flight.queued, w)
	default:
		g.flight.waiters = joinWaiter(g.flight.waiters, w)
		g.opts.Logger.Debug(JoinedLog, slog.String("run_key", m.GetRunKey()))
	}
}

// joinWaiter adds w to ws, or, when ws holds a waiter with w's RunKey (the
// caller asked again: its earlier attempt's answer would be lost), puts
// w's sender in its place: one request, one waiter, one answer.
func joinWaiter(ws []waiter, w waiter) []waiter {
	if key := w.run.GetRunKey(); key != "" {
		for i := range ws {
			if ws[i].run.GetRunKey() == key {
				ws[i].sender = w.sender
				return ws
			}
		}
	}
	return append(ws, w)
}

// start starts a flight for waiters: the first one's Run is forged (or the
// spec's unfinished forge resumed) for its caller.
func (g *grain) start(ctx actor.Context, waiters []waiter) {
	// The forge continues the trace of the Run that started it.
	c, cancel := context.WithCancel(system.TraceContext(context.Background(), ctx))
	g.flight = &flight{cancel: cancel, waiters: waiters}
	m := waiters[0].run
	self, root, opts, spec, caller, key := ctx.Self(), ctx.ActorSystem().Root, g.opts, m.GetSpec(), callerOf(m.GetCaller()), m.GetRunKey()
	go func() {
		defer cancel()
		root.Send(self, opts.fly(c, spec, key, caller))
	}()
}

// pendingRetries bounds how often fly looks again for a finished forge
// after the unfinished one it found ended under it.
const pendingRetries = 3

// fly answers the flight of spec for the request key: with the spec's
// finished forge (a reuse, or its own result to the request that caused
// it), by resuming its unfinished forge, or by forging.
func (opts GrainOptions) fly(c context.Context, spec, key string, caller *execclient.Caller) *landed {
	if l := opts.ownFailure(c, spec, key); l != nil {
		return l
	}
	for range pendingRetries {
		if opts.Finished != nil {
			kept, origin, ok, err := opts.Finished(c, SpecHash(spec))
			if err != nil {
				opts.Logger.Warn("forge grain: looking for this spec's finished forge", slog.Any("err", err))
			}
			if ok {
				own := resultToPB(kept)
				own.Reused = false
				return &landed{done: reuseOf(resultToPB(kept)), origin: origin, own: &pb.Done{Result: own}}
			}
		}
		id, resume := "", false
		if opts.Pending != nil {
			var err error
			if id, resume, err = opts.Pending(c, SpecHash(spec)); errors.Is(err, journal.ErrEnded) {
				// The forge we waited for ended under us (its node
				// finished it): its tool is the answer, look again.
				continue
			} else if err != nil {
				return &landed{done: doneOf(Result{}, fmt.Errorf("forge: looking for an unfinished forge of this spec in the journal: %w", err))}
			}
		}
		var (
			res Result
			err error
		)
		if resume {
			opts.Logger.Info("forge grain: resuming the unfinished forge of this spec", slog.String("run", id))
			res, err = opts.Forge.Resume(c, id, caller)
		} else {
			res, err = opts.Forge.ForgeAs(c, key, spec, caller)
		}
		if errors.Is(err, journal.ErrClaimed) && c.Err() == nil {
			// This node was paused or cut off past its lease and another
			// node resumed the forge: its outcome is the answer.
			opts.Logger.Warn("forge grain: another node took this forge over; looking for its outcome", slog.Any("err", err))
			continue
		}
		return &landed{done: doneOf(res, err)}
	}
	return &landed{done: doneOf(Result{}, fmt.Errorf("%w: the unfinished forges of this spec kept ending while this activation looked for them; try again", ErrUnavailable))}
}

// ownFailure is the answer to a request asked again whose forge failed (at
// an earlier activation): that failure; nil when it caused no failed forge.
func (opts GrainOptions) ownFailure(c context.Context, spec, key string) *landed {
	if opts.Failed == nil || key == "" {
		return nil
	}
	failure, ok, err := opts.Failed(c, SpecHash(spec), key)
	if err != nil {
		opts.Logger.Warn("forge grain: looking for the failed forge this request caused", slog.Any("err", err))
		return nil
	}
	if !ok {
		return nil
	}
	return &landed{done: doneOf(Result{}, failure)}
}

// reuseOf answers a Run with the tool a forge of the spec made: a reuse,
// score 1.
func reuseOf(r *pb.Result) *pb.Done {
	return &pb.Done{Result: &pb.Result{Reused: true, Path: r.GetPath(), Score: 1, Tests: r.GetTests(), Commit: r.GetCommit(), RunId: r.GetRunId()}}
}

// onCancel takes a caller off the forge; the last one gone cancels it.
func (g *grain) onCancel(m *pb.Cancel) {
	if g.flight == nil {
		return
	}
	f := g.flight
	f.queued = without(f.queued, m.GetRunKey())
	if f.abandoned {
		return
	}
	f.waiters = without(f.waiters, m.GetRunKey())
	if len(f.waiters) == 0 {
		f.abandoned = true
		f.cancel()
	}
}

// without returns ws less the waiter whose Run has key (none: ws).
func without(ws []waiter, key string) []waiter {
	if key == "" {
		return ws
	}
	for i := range ws {
		if ws[i].run.GetRunKey() == key {
			return append(ws[:i:i], ws[i+1:]...)
		}
	}
	return ws
}

func (g *grain) onLanded(ctx actor.Context, m *landed) {
	if g.flight == nil {
		return
	}
	f := g.flight
	f.cancel()
	g.flight = nil
	if m.done.GetFailure().GetCode() == "caller_gone" && !f.abandoned && len(f.waiters) > 1 {
		// The caller the forge worked for is gone (its node died): the
		// forge stays resumable and goes on for the next caller, under its
		// rights and quota.
		ctx.Send(f.waiters[0].sender, m.done)
		g.start(ctx, f.waiters[1:])
		g.flight.queued = f.queued
		return
	}
	passed := m.done.GetFailure() == nil && m.done.GetResult().GetPath() != ""
	final := passed || !interim(m.done.GetFailure().GetCode())
	for _, w := range f.waiters {
		d := m.done
		if key := w.run.GetRunKey(); key != "" && key == m.origin {
			d = m.own // the request that caused the forge found in the journal
		}
		ctx.Send(w.sender, d)
		if final {
			g.remember(w.run.GetRunKey(), d)
		}
	}
	if passed {
		g.kept = m.done.GetResult()
	}
	for _, w := range f.queued { // they came after the forge was abandoned
		g.onRun(ctx, w.run, w.sender)
	}
}

// interim reports whether a failure with code ends the forge for its
// caller only: the forge stays resumable (cancelled, its caller's node
// gone) and a request asked again MUST find it, not this answer.
func interim(code string) bool {
	return code == "cancelled" || code == "caller_gone"
}

// remember keeps d as the answer to the request key (none: nothing kept),
// forgetting the oldest beyond maxAnswered.
func (g *grain) remember(key string, d *pb.Done) {
	if key == "" {
		return
	}
	if g.answered == nil {
		g.answered = map[string]*pb.Done{}
	}
	if _, ok := g.answered[key]; !ok {
		g.answeredOrder = append(g.answeredOrder, key)
	}
	g.answered[key] = d
	if len(g.answeredOrder) > maxAnswered {
		delete(g.answered, g.answeredOrder[0])
		g.answeredOrder = g.answeredOrder[1:]
	}
}

// GrainClient reaches the forge grain of a spec wherever the cluster placed
// it: the node's forge_tool uses it instead of Client when the node is in a
// cluster. It is a value; copy it freely; it is safe for concurrent use.
type GrainClient struct {
	// Request sends msg to the grain identity of GrainKind and returns its
	// reply, within ctx (REQUIRED): the cluster member's grain Request.
	// IMPORTANT: it MUST re-send the Run (the same RunKey) until the grain
	// answers or ctx ends: after an attempt's timeout (a forge takes
	// minutes), and after a topology change lost it (the grain is
	// re-activated elsewhere and resumes the forge, or answers with its
	// outcome). The grain answers a re-sent Run with its request's true
	// outcome: the forge in flight (joined), the answer it already sent,
	// or the journal's record of the forge that request caused.
	Request func(ctx context.Context, identity string, msg proto.Message) (proto.Message, error)
	// Tell sends msg to the grain identity without a reply (REQUIRED):
	// the caller's Cancel.
	Tell func(identity string, msg proto.Message)
}

// Forge reuses or forges a tool for spec through its grain, on behalf of
// caller, as Client.Forge. Cancelling ctx takes the caller off the forge
// (the forge goes on for the other callers of the spec, or stays
// resumable when none is left).
func (c GrainClient) Forge(ctx context.Context, spec string, caller *execclient.Caller) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	id, key := SpecHash(spec), newKey()
	stop := system.AfterCancel(ctx, func() { c.Tell(id, &pb.Cancel{RunKey: key}) })
	defer stop()
	reply, err := c.Request(ctx, id, &pb.Run{RunKey: key, Spec: spec, Caller: callerToPB(caller)})
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if err != nil {
		return Result{}, fmt.Errorf("%w: the forge grain of this spec did not answer: %w; try again", ErrUnavailable, err)
	}
	d, ok := reply.(*pb.Done)
	if !ok {
		return Result{}, fmt.Errorf("forge: unexpected reply %T from the forge grain", reply)
	}
	return resultFromPB(d.GetResult()), errorOf(d.GetFailure())
}
