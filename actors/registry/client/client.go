package client

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/agentos-run/agentos/actors/system"
	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	pb "github.com/agentos-run/agentos/actors/registry/registrypb"
	"github.com/agentos-run/agentos/internal/toolmeta"
)

// DefaultTimeout bounds a Client request when Client.Timeout is zero.
const DefaultTimeout = time.Minute

// DefaultToolsDir is the tools directory under the tool root when none is
// configured (the registry's Options.ToolsDir when empty): the directory
// stripped from a tool's path to name it.
const DefaultToolsDir = "tools"

// DefaultThreshold is the score from which a search hit is close enough to
// reuse instead of writing a new tool (the forge's, and the registry's
// Options.Threshold when zero).
const DefaultThreshold = 0.85

// Client is the typed client of a registry actor: callers use it, never the
// raw messages (registrypb). It converts domain types to wire messages and
// a reply's Failure back to the sentinel errors of errors.go, so errors.Is
// works on what it returns.
//
// A Client is a value: copy it freely. It is safe for concurrent use.
type Client struct {
	// PID is the registry actor (REQUIRED).
	PID *actor.PID
	// Root sends the requests (REQUIRED): the actor system's Root, or the
	// actor.Context of an actor calling the registry. IMPORTANT: a call
	// blocks until the reply; an actor calling it waits with its mailbox
	// held, so the registry actor MUST NOT call back into that actor.
	Root actor.SenderContext
	// Timeout bounds each request (also bounded by the ctx's deadline).
	// Zero means DefaultTimeout.
	Timeout time.Duration
}

// New returns the client of the registry actor pid, sending from root.
func New(root actor.SenderContext, pid *actor.PID) *Client {
	return &Client{PID: pid, Root: root}
}

// Register registers (upserts) the tool at path with source src. It returns
// the entry after the call; errors wrap ErrNotTool (not a tool path: a data
// file), a vfs path error, ErrClosed, ErrPersist (the tool IS registered,
// not yet on disk; Tool is set) or ErrUnavailable.
func (c *Client) Register(ctx context.Context, path string, src []byte) (toolmeta.Tool, error) {
	res, err := request[*pb.Registered](ctx, c, &pb.Register{Path: path, Source: src})
	if err != nil {
		return toolmeta.Tool{}, err
	}
	return toolFromPB(res.GetTool()), errorOf(res.GetFailure())
}

// Search returns the tools best matching query, best first, never nil;
// limit <= 0 means toolmeta.DefaultLimit. The only error is ErrUnavailable.
func (c *Client) Search(ctx context.Context, query string, limit int) ([]toolmeta.Hit, error) {
	res, err := request[*pb.SearchResult](ctx, c, &pb.Search{Query: query, Limit: int32(min(max(limit, 0), math.MaxInt32))})
	if err != nil {
		return nil, err
	}
	if err := errorOf(res.GetFailure()); err != nil {
		return nil, err
	}
	return hitsFromPB(res.GetHits()), nil
}

// Get returns the tool registered at path, and whether there is one. The
// only error is ErrUnavailable.
func (c *Client) Get(ctx context.Context, path string) (toolmeta.Tool, bool, error) {
	res, err := request[*pb.Got](ctx, c, &pb.Get{Path: path})
	if err != nil {
		return toolmeta.Tool{}, false, err
	}
	if err := errorOf(res.GetFailure()); err != nil {
		return toolmeta.Tool{}, false, err
	}
	if res.GetTool() == nil {
		return toolmeta.Tool{}, false, nil
	}
	return toolFromPB(res.GetTool()), true, nil
}

// List returns every registered tool, sorted by path, never nil. The only
// error is ErrUnavailable.
func (c *Client) List(ctx context.Context) ([]toolmeta.Tool, error) {
	res, err := request[*pb.Listed](ctx, c, &pb.List{})
	if err != nil {
		return nil, err
	}
	if err := errorOf(res.GetFailure()); err != nil {
		return nil, err
	}
	tools := make([]toolmeta.Tool, 0, len(res.GetTools()))
	for _, t := range res.GetTools() {
		tools = append(tools, toolFromPB(t))
	}
	return tools, nil
}

// Changed is the event the registry actor publishes on its actor system's
// EventStream after every change to the set of tools or to one tool's
// entry other than its usage count (what the registry's Watch reports: a
// Register that added a tool or a new version, a Remove, a Rebuild that
// changed something). Registry is the actor that published it. It is not
// told what changed: List.
//
// IMPORTANT: Changed is a local event: it is never sent to an actor and
// never crosses a node (an EventStream is one actor system's).
type Changed struct{ Registry *actor.PID }

// Watch calls fn after every change the registry actor c.PID publishes
// (Changed) until stop is called; stop may be called more than once. fn runs
// on the goroutine that made the change: IMPORTANT: it MUST NOT block
// (signal a goroutine of its own, e.g. a non-blocking send on a buffered
// channel). Watch sends no message: the changes come through the EventStream
// of c.Root's actor system, so a Client of another node's registry hears of
// none.
func (c *Client) Watch(fn func()) (stop func()) {
	pid := c.PID
	es := c.Root.ActorSystem().EventStream
	sub := es.SubscribeWithPredicate(func(any) { fn() }, func(evt any) bool {
		ch, ok := evt.(*Changed)
		return ok && ch.Registry.Equal(pid)
	})
	return sync.OnceFunc(func() { es.Unsubscribe(sub) })
}

// Used counts one use of the tool at path and returns once the registry
// took the count (it is written within the registry's flush delay, and at
// the latest when the registry closes). The only error is ErrUnavailable.
func (c *Client) Used(ctx context.Context, path string) error {
	res, err := request[*pb.Counted](ctx, c, &pb.Used{Path: path})
	if err != nil {
		return err
	}
	return errorOf(res.GetFailure())
}

// request sends req to the registry actor and waits for a reply of type R, at
// most Timeout and until ctx ends.
func request[R proto.Message](ctx context.Context, c *Client, req proto.Message) (R, error) {
	var zero R
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	name := req.ProtoReflect().Descriptor().Name()
	res, err := system.Ask(ctx, c.Root, c.PID, system.Outgoing(c.Root, c.PID, req), timeout)
	if err != nil {
		return zero, fmt.Errorf("%w: %s to %s: %w; check that the node's registry actor is running", ErrUnavailable, name, c.PID, err)
	}
	out, ok := res.(R)
	if !ok {
		return zero, fmt.Errorf("%w: %s to %s answered %T, want %T", ErrUnavailable, name, c.PID, res, zero)
	}
	return out, nil
}
