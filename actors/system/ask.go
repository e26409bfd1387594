package system

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// ErrNoReply: an actor did not answer a request in time: it is stopped,
// restarting or overloaded. The request may still be handled.
var ErrNoReply = errors.New("system: no reply")

// Ask sends req to pid as a request from sender and returns the reply. It
// waits at most timeout, and never longer than ctx: a deadline on ctx
// shortens the wait, and ctx ending returns ctx's error at once (the
// request, already sent, may still be handled: a request that must be
// withdrawn needs its own cancel message, as the executor's and forge's
// runs have). Errors: ctx's error when ctx ended before the reply (or
// before sending), ErrNoReply wrapping protoactor's when no reply came in
// time.
//
// When ctx ends first, the request's future is stopped: nothing keeps
// waiting for the abandoned reply, which then goes to the dead letters,
// as a reply after the timeout does.
//
// It is the one request path of the actors' typed clients; each wraps its
// errors in its own package's sentinel (ErrUnavailable) and checks the
// reply's type.
func Ask(ctx context.Context, sender actor.SenderContext, pid *actor.PID, req any, timeout time.Duration) (any, error) {
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if timeout <= 0 {
		return nil, context.DeadlineExceeded
	}
	f := RequestFuture(ctx, sender, pid, req, timeout)
	select {
	case <-f.Done():
	case <-ctx.Done():
		sender.ActorSystem().Root.Stop(f.PID()) // nothing waits for the abandoned reply
		return nil, ctx.Err()
	}
	res, err := f.Result()
	if err != nil {
		return nil, fmt.Errorf("%w from %s within %s: %w", ErrNoReply, pid.GetId(), timeout, err)
	}
	return res, nil
}

// AfterCancel is context.AfterFunc(ctx, f) for a cancel message: its stop
// also runs f (on the caller's goroutine) when ctx has ended but f has not
// started. context.AfterFunc's own stop can win the race with a
// cancellation in progress, since ctx.Done is closed before the AfterFunc
// is started: a client that returns on ctx.Done and stops it would then
// never send its Cancel, and the run it abandoned would go on.
//
// IMPORTANT: f runs at most once, and exactly once when ctx ends before
// stop returns.
func AfterCancel(ctx context.Context, f func()) (stop func()) {
	s := context.AfterFunc(ctx, f)
	return func() {
		if s() && ctx.Err() != nil {
			f()
		}
	}
}
