package registry

import (
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
)

// Props returns the props of a registry actor serving r. The actor holds no
// state of its own: r outlives its restarts, and its owner closes it.
func Props(r *Registry) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &registryActor{r: r} })
}

type registryActor struct{ r *Registry }

// Receive is the registry actor's one message switch.
func (a *registryActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *Register:
		ctx.Respond(a.onRegister(m))
	case *Search:
		ctx.Respond(a.onSearch(m))
	case *Rebuild:
		ctx.Respond(a.onRebuild())
	case *Used:
		a.onUsed(m)
	case *Remove:
		ctx.Respond(a.onRemove(m))
	case *Flush:
		ctx.Respond(a.onFlush())
	case *actor.Stopping:
		a.onStopping(ctx)
	case *actor.Started, *actor.Stopped, *actor.Restarting:
	default:
		ctx.Logger().Warn("registry: unknown message", slog.String("type", fmt.Sprintf("%T", m)))
	}
}

func (a *registryActor) onRegister(m *Register) *Registered {
	t, err := a.r.Register(m.Path, m.Source)
	return &Registered{Tool: t, Err: err}
}

func (a *registryActor) onSearch(m *Search) *SearchResult {
	return &SearchResult{Hits: a.r.Search(m.Query, m.Limit)}
}

func (a *registryActor) onRebuild() *Rebuilt { return &Rebuilt{Err: a.r.Rebuild()} }

func (a *registryActor) onUsed(m *Used) { a.r.Used(m.Path) }

func (a *registryActor) onRemove(m *Remove) *Removed { return &Removed{Err: a.r.Remove(m.Path)} }

func (a *registryActor) onFlush() *Flushed { return &Flushed{Err: a.r.Flush()} }

// onStopping writes pending usage counts, so a stopped node loses none.
func (a *registryActor) onStopping(ctx actor.Context) {
	if err := a.r.Flush(); err != nil {
		ctx.Logger().Warn("registry: flush on stop failed", slog.Any("err", err))
	}
}
