package forge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/agentos-run/agentos/actors/executor"
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

// SpecOf returns the spec a forge run was journaled with (its RunMeta.Args
// are {"spec": ...}); ok false for a run of another kind or without one.
func SpecOf(m journal.RunMeta) (spec string, ok bool) {
	if m.Kind != Kind {
		return "", false
	}
	var a struct {
		Spec string `json:"spec"`
	}
	if json.Unmarshal(m.Args, &a) != nil || a.Spec == "" {
		return "", false
	}
	return a.Spec, true
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
	// cluster changed) answers with it as a reuse instead of forging again.
	// ok false: there is none. nil: nothing is looked for.
	Finished func(ctx context.Context, specHash string) (res Result, ok bool, err error)
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
}

// flight is a forge in flight and the callers waiting for it.
type flight struct {
	cancel  context.CancelFunc
	waiters []waiter
	// abandoned: its last caller left, so it was cancelled; Runs that
	// arrive meanwhile wait in queued for the next flight.
	abandoned bool
	queued    []waiter
}

// waiter is a caller waiting for the flight's Done.
type waiter struct {
	sender *actor.PID
	run    *pb.Run
}

// landed is what the flight's goroutine sends the grain when its forge
// ended (local only: it never crosses a node).
type landed struct{ done *pb.Done }

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
	if g.kept != nil {
		ctx.Send(sender, reuseOf(g.kept))
		return
	}
	w := waiter{sender: sender, run: m}
	switch {
	case g.flight == nil:
		g.start(ctx, []waiter{w})
	case g.flight.abandoned:
		g.flight.queued = append(g.flight.queued, w)
	default:
		g.flight.waiters = append(g.flight.waiters, w)
	}
}

// start starts a flight for waiters: the first one's Run is forged (or the
// spec's unfinished forge resumed) for its caller.
func (g *grain) start(ctx actor.Context, waiters []waiter) {
	// The forge continues the trace of the Run that started it.
	c, cancel := context.WithCancel(system.TraceContext(context.Background(), ctx))
	g.flight = &flight{cancel: cancel, waiters: waiters}
	m := waiters[0].run
	self, root, opts, spec, caller := ctx.Self(), ctx.ActorSystem().Root, g.opts, m.GetSpec(), callerOf(m.GetCaller())
	go func() {
		defer cancel()
		var (
			res Result
			err error
		)
		if opts.Finished != nil {
			kept, ok, err := opts.Finished(c, SpecHash(spec))
			if err != nil {
				opts.Logger.Warn("forge grain: looking for this spec's finished forge", slog.Any("err", err))
			}
			if ok {
				root.Send(self, &landed{done: reuseOf(resultToPB(kept))})
				return
			}
		}
		id, resume := "", false
		if opts.Pending != nil {
			if id, resume, err = opts.Pending(c, SpecHash(spec)); err != nil {
				root.Send(self, &landed{done: doneOf(Result{}, fmt.Errorf("forge: looking for an unfinished forge of this spec in the journal: %w", err))})
				return
			}
		}
		if resume {
			opts.Logger.Info("forge grain: resuming the unfinished forge of this spec", slog.String("run", id))
			res, err = opts.Forge.Resume(c, id, caller)
		} else {
			res, err = opts.Forge.Forge(c, spec, caller)
		}
		root.Send(self, &landed{done: doneOf(res, err)})
	}()
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
	for _, w := range f.waiters {
		ctx.Send(w.sender, m.done)
	}
	if m.done.GetFailure() == nil && m.done.GetResult().GetPath() != "" {
		g.kept = m.done.GetResult()
	}
	for _, w := range f.queued { // they came after the forge was abandoned
		g.onRun(ctx, w.run, w.sender)
	}
}

// GrainClient reaches the forge grain of a spec wherever the cluster placed
// it: the node's forge_tool uses it instead of Client when the node is in a
// cluster. It is a value; copy it freely; it is safe for concurrent use.
type GrainClient struct {
	// Request sends msg to the grain identity of GrainKind and returns its
	// reply, within ctx (REQUIRED): the cluster member's grain request,
	// which IMPORTANT: MUST retry a request that a topology change lost
	// (the grain is re-activated elsewhere and resumes the forge).
	Request func(ctx context.Context, identity string, msg proto.Message) (proto.Message, error)
	// Tell sends msg to the grain identity without a reply (REQUIRED):
	// the caller's Cancel.
	Tell func(identity string, msg proto.Message)
}

// Forge reuses or forges a tool for spec through its grain, on behalf of
// caller, as Client.Forge. Cancelling ctx takes the caller off the forge
// (the forge goes on for the other callers of the spec, or stays
// resumable when none is left).
func (c GrainClient) Forge(ctx context.Context, spec string, caller *executor.Caller) (Result, error) {
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
