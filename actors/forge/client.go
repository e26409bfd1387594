package forge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/asynkron/protoactor-go/actor"

	pb "github.com/agentos-run/agentos/actors/forge/forgepb"
)

// DefaultWait bounds the wait for a forge's Done when Client.Timeout is
// zero: a forge waits on the model for seconds per attempt.
const DefaultWait = 30 * time.Minute

// ErrUnavailable: the forge actor did not answer in time (it may be
// restarting or stopped); try again.
var ErrUnavailable = errors.New("forge: the forge actor did not answer")

// Client is the typed client of a forge actor: callers use it, never the
// raw messages (forgepb). A Client is a value: copy it freely; it is safe
// for concurrent use.
type Client struct {
	// PID is the forge actor (REQUIRED).
	PID *actor.PID
	// Root sends the requests (REQUIRED).
	Root actor.SenderContext
	// Timeout bounds each forge (0: DefaultWait).
	Timeout time.Duration
}

// NewClient returns the client of the forge actor pid, sending from root.
func NewClient(root actor.SenderContext, pid *actor.PID) *Client {
	return &Client{PID: pid, Root: root}
}

// Forge reuses or forges a tool for spec on behalf of caller (nil: the
// operator): its tests run with caller's rights and the model usage is
// charged to caller's quota. Errors wrap the forge's sentinels (ErrGaveUp
// comes with the Result listing the attempts), *capability.QuotaError,
// context.Canceled or ErrUnavailable. Cancelling ctx sends Cancel: the
// forge stops and stays resumable.
func (c *Client) Forge(ctx context.Context, spec string, caller *execclient.Caller) (Result, error) {
	return c.ForgeAs(ctx, newKey(), spec, caller)
}

// ForgeAs is Forge under the request key key (unique among the forges in
// flight): the forge's journal run keeps it (forgerun.RequestOf), so that the
// request's retry is told truthfully that it forged (the forge grain uses
// its callers' keys).
func (c *Client) ForgeAs(ctx context.Context, key, spec string, caller *execclient.Caller) (Result, error) {
	if key == "" {
		key = newKey() // cancellable all the same
	}
	return c.ask(ctx, key, &pb.Run{RunKey: key, Spec: spec, Caller: callerToPB(caller)})
}

// Resume resumes the forge run id (interrupted by a crash) on behalf of
// caller, as Forge.
func (c *Client) Resume(ctx context.Context, id string, caller *execclient.Caller) (Result, error) {
	key := newKey()
	return c.ask(ctx, key, &pb.Resume{RunKey: key, Id: id, Caller: callerToPB(caller)})
}

func (c *Client) ask(ctx context.Context, key string, msg any) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	wait := c.Timeout
	if wait <= 0 {
		wait = DefaultWait
	}
	stop := system.AfterCancel(ctx, func() { c.Root.Send(c.PID, system.Outgoing(c.Root, c.PID, &pb.Cancel{RunKey: key})) })
	defer stop()
	reply, err := system.Ask(ctx, c.Root, c.PID, system.Outgoing(c.Root, c.PID, msg), wait)
	if err := ctx.Err(); err != nil {
		return Result{}, err // the Cancel is on its way; the forge stays resumable
	}
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w; the actor may be restarting, try again", ErrUnavailable, err)
	}
	d, ok := reply.(*pb.Done)
	if !ok {
		return Result{}, fmt.Errorf("forge: unexpected reply %T", reply)
	}
	return resultFromPB(d.GetResult()), errorOf(d.GetFailure())
}

func newKey() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
