package registry

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	regclient "github.com/agentos-run/agentos/actors/registry/client"
	pb "github.com/agentos-run/agentos/actors/registry/registrypb"
	"github.com/agentos-run/agentos/actors/system"
)

// Props returns the props of a registry actor serving r. The actor holds no
// state of its own but its watch of r: r outlives its restarts, and its
// owner closes it. While it runs, it publishes a regclient.Changed on its
// actor system's EventStream after every change r's Watch reports
// (regclient.Client.Watch hears them).
func Props(r *Registry) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &registryActor{r: r} })
}

type registryActor struct {
	r         *Registry
	stopWatch func() // stops publishing r's changes (nil: not watching)
}

// Receive is the registry actor's one message switch. It serves only its
// own node (a request in a system.Local): any other is answered with its
// reply type carrying "unauthenticated", and nothing is done.
func (a *registryActor) Receive(ctx actor.Context) {
	msg, local := system.Unwrap(ctx.Message())
	if !local {
		if f := refusal(msg); f != nil {
			ctx.Respond(f)
			return
		}
	}
	switch m := msg.(type) {
	case *pb.Register:
		ctx.Respond(a.onRegister(m))
	case *pb.Search:
		ctx.Respond(a.onSearch(m))
	case *pb.Get:
		ctx.Respond(a.onGet(m))
	case *pb.List:
		ctx.Respond(a.onList())
	case *pb.Used:
		ctx.Respond(a.onUsed(m))
	case *actor.Started:
		a.onStarted(ctx)
	case *actor.Stopping:
		a.onStopping(ctx)
	case *actor.Restarting:
		a.unwatch()
	case *actor.Stopped:
	default:
		ctx.Logger().Warn("registry: unknown message", slog.String("type", fmt.Sprintf("%T", m)))
	}
}

// refusal is the reply to a request from outside the node; nil for what
// is not a request of the registry's.
func refusal(msg any) proto.Message {
	var name string
	switch msg.(type) {
	case *pb.Register, *pb.Search, *pb.Get, *pb.List, *pb.Used:
		name = fmt.Sprintf("%T", msg)
		name = name[strings.LastIndex(name, ".")+1:]
	default:
		return nil
	}
	f := failureOf(fmt.Errorf("%w: %s came from outside this node: the registry serves only its own node (tools are registered when a write lands through the node's git actor, and searched through its kernel tools)", system.ErrUnauthenticated, name))
	switch msg.(type) {
	case *pb.Register:
		return &pb.Registered{Failure: f}
	case *pb.Search:
		return &pb.SearchResult{Failure: f}
	case *pb.Get:
		return &pb.Got{Failure: f}
	case *pb.List:
		return &pb.Listed{Failure: f}
	default:
		return &pb.Counted{Failure: f}
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

func (a *registryActor) onList() *pb.Listed {
	tools := a.r.List()
	res := &pb.Listed{Tools: make([]*pb.Tool, 0, len(tools))}
	for _, t := range tools {
		res.Tools = append(res.Tools, toolToPB(t))
	}
	return res
}

func (a *registryActor) onUsed(m *pb.Used) *pb.Counted {
	a.r.Used(m.GetPath())
	return &pb.Counted{}
}

// onStarted publishes the registry's changes on the actor system's
// EventStream (regclient.Changed, naming this actor) until the actor stops
// or restarts. The publish runs on the goroutine that made the change, as
// Watch calls it: the EventStream's subscribers MUST NOT block.
func (a *registryActor) onStarted(ctx actor.Context) {
	es, self := ctx.ActorSystem().EventStream, ctx.Self()
	a.stopWatch = a.r.Watch(func() { es.Publish(&regclient.Changed{Registry: self}) })
}

// unwatch stops publishing the registry's changes.
func (a *registryActor) unwatch() {
	if a.stopWatch != nil {
		a.stopWatch()
		a.stopWatch = nil
	}
}

// onStopping stops publishing the registry's changes and writes pending
// usage counts, so a stopped node loses none.
func (a *registryActor) onStopping(ctx actor.Context) {
	a.unwatch()
	if err := a.r.Flush(); err != nil {
		ctx.Logger().Warn("registry: flush on stop failed", slog.Any("err", err))
	}
}
