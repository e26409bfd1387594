package forge

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// Props returns the props of a forge actor. Forges run on their own
// goroutines (they wait on the model for seconds); the reply goes straight
// to the sender. Stopping the actor cancels them (their journal runs stay
// resumable) and waits.
func Props(f *Forge) *actor.Props {
	s := &state{f: f}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return actor.PropsFromProducer(func() actor.Actor { return &forgeActor{s: s} })
}

type state struct {
	f      *Forge
	ctx    context.Context
	cancel context.CancelFunc
	runs   sync.WaitGroup
}

type forgeActor struct{ s *state }

// Receive is the forge actor's one message switch.
func (a *forgeActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *Run:
		a.start(ctx, m.Ctx, func(c context.Context) (Result, error) { return a.s.f.Forge(c, m.Spec, m.Charge) })
	case *Resume:
		a.start(ctx, m.Ctx, func(c context.Context) (Result, error) { return a.s.f.Resume(c, m.ID, m.Charge) })
	case *actor.Stopping:
		a.s.cancel()
		a.s.runs.Wait()
	case *actor.Started, *actor.Stopped, *actor.Restarting:
	default:
		ctx.Logger().Warn("forge: unknown message", slog.String("type", fmt.Sprintf("%T", m)))
	}
}

func (a *forgeActor) start(ctx actor.Context, callerCtx context.Context, run func(context.Context) (Result, error)) {
	sender, sys := ctx.Sender(), ctx.ActorSystem()
	if sender == nil {
		ctx.Logger().Warn("forge: a request without a sender; use RequestFuture")
		return
	}
	if callerCtx == nil {
		callerCtx = context.Background()
	}
	a.s.runs.Add(1)
	go func() {
		defer a.s.runs.Done()
		c, cancel := context.WithCancel(callerCtx)
		defer cancel()
		stop := context.AfterFunc(a.s.ctx, cancel)
		defer stop()
		res, err := run(c)
		sys.Root.Send(sender, &Done{Result: res, Err: err})
	}()
}
