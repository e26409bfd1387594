package forge

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	pb "github.com/agentos-run/agentos/actors/forge/forgepb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver/llm"
)

// Props returns the props of a forge actor. Forges run on their own
// goroutines (they wait on the model for seconds); the reply goes straight
// to the sender. Stopping the actor cancels them (their journal runs stay
// resumable) and waits.
func Props(f *Forge) *actor.Props {
	s := &state{f: f, runs: map[string]context.CancelFunc{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return actor.PropsFromProducer(func() actor.Actor { return &forgeActor{s: s} })
}

type state struct {
	f      *Forge
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	runs map[string]context.CancelFunc // forges in flight, by run key
}

type forgeActor struct{ s *state }

// Receive is the forge actor's one message switch. It serves only its own
// node (requests in a system.Local: the node's forge_tool, recovery and
// the cluster's forge grains, which check their callers first): a request
// from another node is refused ("unauthenticated") and nothing is done.
// Another node forges through the spec's grain (GrainProps).
func (a *forgeActor) Receive(ctx actor.Context) {
	msg, local := system.Unwrap(ctx.Message())
	switch m := msg.(type) {
	case *pb.Run:
		if !local {
			ctx.Respond(refused(a.remote("Run")))
			return
		}
		a.onRun(ctx, m)
	case *pb.Resume:
		if !local {
			ctx.Respond(refused(a.remote("Resume of " + m.GetId())))
			return
		}
		a.onResume(ctx, m)
	case *pb.Cancel:
		if !local {
			ctx.Logger().Warn("forge: a Cancel from outside the node ignored", slog.Any("err", a.remote("Cancel")))
			return
		}
		a.onCancel(m)
	case *actor.Stopping:
		a.s.cancel()
		a.s.wg.Wait()
	case *actor.Started, *actor.Stopped, *actor.Restarting:
	default:
		ctx.Logger().Warn("forge: unknown message", slog.String("type", fmt.Sprintf("%T", m)))
	}
}

// remote is the refusal of a request from another node.
func (a *forgeActor) remote(what string) error {
	return fmt.Errorf("%w: %s came from outside this node: the forge actor serves only its own node; another node forges through the spec's grain (forge.GrainKind), with its caller's token", system.ErrUnauthenticated, what)
}

func (a *forgeActor) onRun(ctx actor.Context, m *pb.Run) {
	caller := callerOf(m.GetCaller())
	a.start(ctx, m.GetRunKey(), func(c context.Context) (Result, error) {
		return a.s.f.forge(c, m.GetRunKey(), m.GetSpec(), caller, a.s.charge(c, caller))
	})
}

func (a *forgeActor) onResume(ctx actor.Context, m *pb.Resume) {
	caller := callerOf(m.GetCaller())
	a.start(ctx, m.GetRunKey(), func(c context.Context) (Result, error) {
		return a.s.f.resume(c, m.GetId(), caller, a.s.charge(c, caller))
	})
}

// onCancel cancels the forge in flight named by the key (none: nothing to
// do; its Done has been sent or is on its way).
func (a *forgeActor) onCancel(m *pb.Cancel) {
	a.s.mu.Lock()
	if cancel, ok := a.s.runs[m.GetRunKey()]; ok {
		cancel()
	}
	a.s.mu.Unlock()
}

// start runs a forge on its own goroutine, cancellable by key.
func (a *forgeActor) start(ctx actor.Context, key string, run func(context.Context) (Result, error)) {
	sender, sys := ctx.Sender(), ctx.ActorSystem()
	if sender == nil {
		ctx.Logger().Warn("forge: a request without a sender; use forge.Client")
		return
	}
	s := a.s
	c, cancel := context.WithCancel(system.TraceContext(s.ctx, ctx))
	if key != "" {
		s.mu.Lock()
		if _, busy := s.runs[key]; busy {
			s.mu.Unlock()
			cancel()
			ctx.Respond(&pb.Done{Failure: &pb.Failure{Code: "internal", Message: fmt.Sprintf("forge: the run key %q is in use by a forge in flight; choose a unique key", key)}})
			return
		}
		s.runs[key] = cancel
		s.mu.Unlock()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		if key != "" {
			defer func() { s.mu.Lock(); delete(s.runs, key); s.mu.Unlock() }()
		}
		res, err := run(c)
		sys.Root.Send(sender, doneOf(res, err))
	}()
}

// charge charges a model answer's tokens and cost to caller's quota
// through the Charger (nil without a caller or a Charger).
func (s *state) charge(ctx context.Context, caller *execclient.Caller) Charge {
	ch := s.f.opts.Charger
	if caller == nil || ch == nil {
		return nil
	}
	one := func(m capability.Meter, amount float64) error { return ch.Charge(ctx, caller.PID, m, amount) }
	if caller.Home != "" {
		hc, ok := ch.(HomeCharger)
		if !ok {
			return func(llm.Usage) error {
				return fmt.Errorf("%w: the caller lives on the node at %s and this node's Charger cannot reach it (a forge.HomeCharger can)", ErrOptions, caller.Home)
			}
		}
		one = func(m capability.Meter, amount float64) error {
			return hc.ChargeAt(ctx, caller.Home, caller.PID, m, amount)
		}
	}
	return func(u llm.Usage) error {
		if err := one(capability.LLMTokens, float64(u.TotalTokens)); err != nil {
			return err
		}
		return one(capability.CostUSD, u.CostUSD)
	}
}
