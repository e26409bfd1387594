package registry

import (
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	pb "github.com/agentos-run/agentos/actors/registry/registrypb"
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
	case *pb.Register:
		ctx.Respond(a.onRegister(m))
	case *pb.Search:
		ctx.Respond(a.onSearch(m))
	case *pb.Get:
		ctx.Respond(a.onGet(m))
	case *pb.Used:
		ctx.Respond(a.onUsed(m))
	case *actor.Stopping:
		a.onStopping(ctx)
	case *actor.Started, *actor.Stopped, *actor.Restarting:
	default:
		ctx.Logger().Warn("registry: unknown message", slog.String("type", fmt.Sprintf("%T", m)))
	}
}

func (a *registryActor) onRegister(m *pb.Register) *pb.Registered {
	t, err := a.r.Register(m.GetPath(), m.GetSource())
	res := &pb.Registered{Failure: failureOf(err)}
	if t.Path != "" {
		res.Tool = toolToPB(t)
	}
	return res
}

func (a *registryActor) onSearch(m *pb.Search) *pb.SearchResult {
	hits := a.r.Search(m.GetQuery(), int(m.GetLimit()))
	res := &pb.SearchResult{Hits: make([]*pb.Hit, 0, len(hits))}
	for _, h := range hits {
		res.Hits = append(res.Hits, &pb.Hit{Tool: toolToPB(h.Tool), Score: h.Score})
	}
	return res
}

func (a *registryActor) onGet(m *pb.Get) *pb.Got {
	t, ok := a.r.Get(m.GetPath())
	if !ok {
		return &pb.Got{}
	}
	return &pb.Got{Tool: toolToPB(t)}
}

func (a *registryActor) onUsed(m *pb.Used) *pb.Counted {
	a.r.Used(m.GetPath())
	return &pb.Counted{}
}

// onStopping writes pending usage counts, so a stopped node loses none.
func (a *registryActor) onStopping(ctx actor.Context) {
	if err := a.r.Flush(); err != nil {
		ctx.Logger().Warn("registry: flush on stop failed", slog.Any("err", err))
	}
}
