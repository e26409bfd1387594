package kernel

import (
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
)

// Props returns the props of the kernel actor serving k.
func Props(k *Kernel) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &kernelActor{k: k} })
}

type kernelActor struct{ k *Kernel }

// Receive is the kernel actor's one message switch.
func (a *kernelActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *PS:
		ctx.Respond(&PSReply{Procs: a.k.PS()})
	case *EventsQuery:
		ctx.Respond(&EventsReply{Events: a.k.Events(m.After, m.Limit)})
	case *Signal:
		ctx.Respond(&SignalReply{Err: a.onSignal(m)})
	case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting:
	default:
		ctx.Logger().Warn("kernel: unknown message", slog.String("type", fmt.Sprintf("%T", m)))
	}
}

func (a *kernelActor) onSignal(m *Signal) error {
	switch m.Sig {
	case "kill":
		return a.k.Kill(m.PID, m.By)
	case "term":
		return a.k.Terminate(m.PID, 0)
	case "stop":
		return a.k.Stop(m.PID)
	case "cont":
		return a.k.Continue(m.PID)
	default:
		return fmt.Errorf("%w: unknown signal %q (use kill, term, stop or cont)", ErrInvalid, m.Sig)
	}
}
