package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/agentos-run/agentos/actors/system"

	pb "github.com/agentos-run/agentos/actors/executor/executorpb"
	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
	"github.com/agentos-run/agentos/capability"
)

// DefaultRunWait bounds the wait for a run's reply when RunRequest.Wait is
// zero (the run's own timeout normally ends it long before).
const DefaultRunWait = 10 * time.Minute

// CancelWait bounds how long Client.Cancel waits for the actor to confirm,
// and how long Run still waits for the cancelled run's reply once its
// context has ended.
const CancelWait = 10 * time.Second

// Caller is the process a run executes for (executorpb.Caller): the run
// gets exactly the rights its token grants, checked by the executor actor
// on every file access and driver call.
type Caller struct {
	// PID and Name identify the process (Name "" when it has none).
	PID  uint64
	Name string
	// Holder is the process's name in tokens ("pid:<n>").
	Holder string
	// Token is the process's capability token.
	Token capability.Token
	// TokenText is Token encoded (capability.Token.Encode), when the caller
	// holds it so ("": Token is encoded for each request). It MUST be
	// Token's encoding.
	TokenText string
	// Home is the remote address of the node the process lives on ("": the
	// node handling the request). Work placed on another node of a cluster
	// charges the process's quota there, on its home node.
	Home string
}

// RunRequest is one run asked of the executor actor.
type RunRequest struct {
	// Key names the run for cancellation ("": Run picks one with
	// NewRunKey). IMPORTANT: unique among the runs in flight.
	Key string
	// Path, Args and Limits are executor.Request's: the tool, its JSON
	// arguments, and limits over the executor's defaults (executor.Limits).
	Path   string
	Args   json.RawMessage
	Limits sandbox.Limits
	// Record journals the run (when the actor has a journal).
	Record bool
	// Hash, when set, is the content hash the entry file MUST have where
	// the run executes (a run placed on another node): another version
	// there fails the request with ErrStaleTool.
	Hash string
	// GateModules and Judged: the approval gate judged the entry (Hash)
	// with the modules Judged (path@hash); every other module the run
	// loads from the tool tree is judged as it loads, and refused when the
	// gate would hold it (pb.Run.gate_modules).
	GateModules bool
	Judged      []string
	// Source, with Hash, is the entry's content as the caller read it:
	// the executor checks it against Hash and runs it without reading the
	// file again (pb.Run.source). IMPORTANT: only for a run on this node;
	// a run placed on another node is held to that node's file by Hash.
	Source []byte
	// Overlay holds, by path, modules the run loads from memory instead of
	// the tool tree (the forge's candidate and its tests, never written):
	// see pb.Run.overlay. IMPORTANT: only for a run on this node, and only
	// paths under the staging directory (tools/.forge/); anything else is
	// refused with ErrOverlay.
	Overlay map[string][]byte
	// Caller is the process the run executes for. IMPORTANT: nil means no
	// caller restriction (the operator's own runs); a run made on behalf
	// of a process MUST carry it.
	Caller *Caller
	// Wait bounds the wait for the reply (0: DefaultRunWait).
	Wait time.Duration
}

// Client is the typed client of an executor actor: callers use it, never
// the raw messages (executorpb). A Client is a value: copy it freely; it is
// safe for concurrent use.
type Client struct {
	// PID is the executor actor (REQUIRED).
	PID *actor.PID
	// Root sends the requests (REQUIRED): the actor system's Root, or the
	// actor.Context of an actor calling the executor.
	Root actor.SenderContext
}

// New returns the client of the executor actor pid, sending from root.
func New(root actor.SenderContext, pid *actor.PID) *Client {
	return &Client{PID: pid, Root: root}
}

// NewRunKey returns a fresh random run key.
func NewRunKey() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Run runs a tool on the executor actor and waits for its result and its
// journal run id ("" when not recorded). The run's own failures are in
// Result.Error; err is a failure of the request: the caller's token refused
// (wrapping capability.ErrInvalid, ErrRevoked or ErrExpired),
// ErrNoAuthority, ErrJournal, ErrRunKeyInUse, ErrUnavailable.
//
// Cancelling ctx sends Cancel{run_key}: the run ends with Kind
// "cancelled" (a journaled run stays resumable) and Run returns that
// result, or ctx's error if no reply comes within CancelWait.
func (c *Client) Run(ctx context.Context, req RunRequest) (Result, string, error) {
	if req.Key == "" {
		req.Key = NewRunKey()
	}
	wait := req.Wait
	if wait <= 0 {
		wait = DefaultRunWait
	}
	if err := ctx.Err(); err != nil {
		return Result{Logs: []string{}, Result: json.RawMessage("null"), Error: &sandbox.Error{Kind: sandbox.KindCancelled, Message: fmt.Sprintf("the run was cancelled before it started (%v)", context.Cause(ctx))}}, "", nil
	}
	msg := &pb.Run{RunKey: req.Key, Path: req.Path, Args: req.Args, Limits: limitsToPB(req.Limits), Record: req.Record, Caller: callerToPB(req.Caller), Hash: req.Hash, GateModules: req.GateModules, Judged: req.Judged, Source: req.Source, Overlay: req.Overlay}
	f := system.RequestFuture(ctx, c.Root, c.PID, system.Outgoing(c.Root, c.PID, msg), wait) // the run continues ctx's trace
	stop := system.AfterCancel(ctx, func() { c.Root.Send(c.PID, system.Outgoing(c.Root, c.PID, &pb.Cancel{RunKey: req.Key})) })
	defer stop()
	select {
	case <-f.Done():
	case <-ctx.Done():
		select { // the Cancel is on its way: the reply normally follows
		case <-f.Done():
		case <-time.After(CancelWait):
			return Result{}, "", ctx.Err()
		}
	}
	reply, err := f.Result()
	if err != nil {
		return Result{}, "", fmt.Errorf("%w: no reply from %s within %s (%v); the actor may be restarting, try again", ErrUnavailable, c.PID.GetId(), wait, err)
	}
	ran, ok := reply.(*pb.Ran)
	if !ok {
		return Result{}, "", fmt.Errorf("%w: %T to Run", ErrProtocol, reply)
	}
	if f := ran.GetFailure(); f != nil {
		return Result{}, ran.GetRunId(), errorOf(f)
	}
	return resultOf(ran), ran.GetRunId(), nil
}

// Cancel cancels the run named key and waits, at most CancelWait, until the
// actor confirms that the run's context is cancelled: after it returns, the
// run sees its own cancellation before anything the caller does next (the
// kernel revoking the process's token). A key whose Run has not arrived yet
// is remembered, and that run never starts. found says a run was in
// flight; the only error is ErrUnavailable.
func (c *Client) Cancel(key string) (found bool, err error) {
	res, err := c.Root.RequestFuture(c.PID, system.Outgoing(c.Root, c.PID, &pb.Cancel{RunKey: key}), CancelWait).Result()
	if err != nil {
		return false, fmt.Errorf("%w: Cancel of run %s not confirmed (%v)", ErrUnavailable, key, err)
	}
	r, ok := res.(*pb.Cancelled)
	if !ok {
		return false, fmt.Errorf("%w: %T to Cancel", ErrProtocol, res)
	}
	return r.GetFound(), nil
}

// DefaultReplayWait bounds the wait for a Replay's reply when ctx has no
// deadline (the replay's own timeout normally ends it long before).
const DefaultReplayWait = 2 * time.Minute

// Replay replays the recorded run id offline on the executor actor, with
// opts (a patched source, new module sources, limits, a timeout cap), and
// returns what it gave compared with the recording. IMPORTANT: the replay
// touches no device: every driver call is answered from the journal of the
// actor (executor.ActorOptions.Journal), and a call the recording does not
// have stops it as a divergence (Replayed.Divergence).
//
// Cancelling ctx sends Cancel: the replay ends with Kind "cancelled".
// err is a failure of the request: the run cannot be replayed (not found,
// not a tool run, its source missing: the error says which), ErrNoJournal,
// ErrUnavailable (no reply by ctx's deadline, else DefaultReplayWait), or
// system.ErrUnauthenticated (the actor is on another node: replays are
// local only).
func (c *Client) Replay(ctx context.Context, id string, opts ReplayOptions) (Replayed, error) {
	wait := DefaultReplayWait
	if d, ok := ctx.Deadline(); ok {
		wait = max(time.Until(d), time.Millisecond)
	}
	msg := replayToPB(id, opts)
	msg.RunKey = NewRunKey()
	f := system.RequestFuture(ctx, c.Root, c.PID, system.Outgoing(c.Root, c.PID, msg), wait)
	// Cancelling ctx cancels the replay: its reply (kind "cancelled") follows.
	stop := system.AfterCancel(ctx, func() { c.Root.Send(c.PID, system.Outgoing(c.Root, c.PID, &pb.Cancel{RunKey: msg.RunKey})) })
	defer stop()
	reply, err := f.Result()
	if err != nil {
		return Replayed{}, fmt.Errorf("%w: no reply to the Replay of run %s from %s within %s (%v); the actor may be restarting, try again", ErrUnavailable, id, c.PID.GetId(), wait, err)
	}
	r, ok := reply.(*pb.Replayed)
	if !ok {
		return Replayed{}, fmt.Errorf("%w: %T to Replay", ErrProtocol, reply)
	}
	if err := errorOf(r.GetFailure()); err != nil {
		return Replayed{}, err
	}
	return replayedOf(r), nil
}
