package client

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentos-run/agentos/actors/system"
	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/agentos-run/agentos/actors/kernel/kernelpb"
	"github.com/agentos-run/agentos/capability"
)

// DefaultTimeout bounds a Client request whose context has no deadline.
const DefaultTimeout = 30 * time.Second

// Client is the typed client of the kernel actor: it sends the kernelpb
// messages and converts the replies to the kernel's domain types, and
// failures back to the kernel's errors (errors.Is with ErrNoProcess,
// ErrExited, ErrNameTaken, ErrClosed, ErrInvalid, capability.ErrDenied;
// errors.As with *capability.QuotaError).
//
// IMPORTANT: PID is the kernel actor's (kerneltools.Node.KernelPID); Root sends the
// requests (a system's root context, or an actor's context: both have
// RequestFuture). A request waits until ctx's deadline, or DefaultTimeout
// when ctx has none.
//
// Token is the capability token (capability.Token.Encode) every request
// carries: the process it acts for (see kernelpb's token fields for what a
// token may ask). Empty: the node itself, which only a client in the
// kernel actor's own process is (the request travels in a system.Local);
// from another node a request without a valid token is refused
// (system.ErrUnauthenticated).
type Client struct {
	PID   *actor.PID
	Root  actor.SenderContext
	Token string
}

func (c Client) request(ctx context.Context, msg proto.Message) (any, error) {
	if c.PID == nil || c.Root == nil {
		return nil, fmt.Errorf("%w: kernelclient.Client needs the kernel actor's PID and a sender context", ErrInvalid)
	}
	timeout := DefaultTimeout // or as long as ctx's deadline
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	res, err := system.Ask(ctx, c.Root, c.PID, system.Outgoing(c.Root, c.PID, system.WithToken(msg, c.Token)), timeout)
	if err != nil {
		return nil, fmt.Errorf("kernel: the kernel actor %v did not answer %T: %w", c.PID, msg, err)
	}
	return res, nil
}

// reply asserts the reply's type.
func reply[T any](res any, err error) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	r, ok := res.(T)
	if !ok {
		return zero, fmt.Errorf("kernel: the kernel actor answered %T, want %T", res, zero)
	}
	return r, nil
}

// PS returns the node's process table, by PID.
func (c Client) PS(ctx context.Context) ([]ProcInfo, error) {
	r, err := reply[*kernelpb.PSReply](c.request(ctx, &kernelpb.PS{}))
	if err != nil {
		return nil, err
	}
	if err := errorOf(r.GetFailure()); err != nil {
		return nil, err
	}
	out := make([]ProcInfo, len(r.GetProcs()))
	for i, p := range r.GetProcs() {
		out[i] = procInfoFromPB(p)
	}
	return out, nil
}

// Events returns the recent kernel events with Seq > after, oldest first,
// at most limit (<= 0: every event still kept).
func (c Client) Events(ctx context.Context, after uint64, limit int) ([]Event, error) {
	r, err := reply[*kernelpb.EventsReply](c.request(ctx, &kernelpb.EventsQuery{After: after, Limit: int64(limit)}))
	if err != nil {
		return nil, err
	}
	if err := errorOf(r.GetFailure()); err != nil {
		return nil, err
	}
	out := make([]Event, len(r.GetEvents()))
	for i, e := range r.GetEvents() {
		out[i] = eventFromPB(e)
	}
	return out, nil
}

// Signal signals pid: "kill" (by names who asked), "term", "stop" or
// "cont".
func (c Client) Signal(ctx context.Context, pid PID, sig, by string) error {
	r, err := reply[*kernelpb.SignalReply](c.request(ctx, &kernelpb.Signal{Pid: uint64(pid), Signal: sig, By: by}))
	if err != nil {
		return err
	}
	return errorOf(r.GetFailure())
}

// Kill ends pid at once (reason "killed: <by>").
func (c Client) Kill(ctx context.Context, pid PID, by string) error {
	return c.Signal(ctx, pid, "kill", by)
}

// Spawn starts a process running a registered image; it returns its PID.
func (c Client) Spawn(ctx context.Context, req SpawnRequest) (PID, error) {
	m := &kernelpb.Spawn{
		Image: req.Image, Name: req.Name, Quota: MetersToPB(req.Quota), Parent: uint64(req.Parent),
		Link: req.Link, DeadlineNs: int64(req.Deadline),
	}
	for _, g := range req.Grants {
		m.Grants = append(m.Grants, &kernelpb.Grant{Right: string(g.Right), Scope: g.Scope})
	}
	r, err := reply[*kernelpb.Spawned](c.request(ctx, m))
	if err != nil {
		return 0, err
	}
	if err := errorOf(r.GetFailure()); err != nil {
		return 0, err
	}
	return PID(r.GetPid()), nil
}

// Send delivers body (JSON) to pid's mailbox: the process receives a
// Message with From 0 and Body a json.RawMessage.
func (c Client) Send(ctx context.Context, pid PID, body json.RawMessage) error {
	_, err := c.send(ctx, &kernelpb.Send{To: &kernelpb.Send_Pid{Pid: uint64(pid)}, Body: body})
	return err
}

// SendName delivers body (JSON) to the process registered as name and
// returns its PID.
func (c Client) SendName(ctx context.Context, name string, body json.RawMessage) (PID, error) {
	return c.send(ctx, &kernelpb.Send{To: &kernelpb.Send_Name{Name: name}, Body: body})
}

func (c Client) send(ctx context.Context, m *kernelpb.Send) (PID, error) {
	r, err := reply[*kernelpb.Sent](c.request(ctx, m))
	if err != nil {
		return 0, err
	}
	if err := errorOf(r.GetFailure()); err != nil {
		return 0, err
	}
	return PID(r.GetPid()), nil
}

// Monitor makes watcher (an actor) receive a *kernelpb.Down when pid ends;
// at once, with reason "noproc", when pid is not alive.
func (c Client) Monitor(ctx context.Context, pid PID, watcher *actor.PID) error {
	if watcher == nil {
		return fmt.Errorf("%w: Client.Monitor of %v needs the watching actor's PID", ErrInvalid, pid)
	}
	r, err := reply[*kernelpb.Monitored](c.request(ctx, &kernelpb.Monitor{Pid: uint64(pid), WatcherAddress: watcher.GetAddress(), WatcherId: watcher.GetId()}))
	if err != nil {
		return err
	}
	return errorOf(r.GetFailure())
}

// Demonitor cancels watcher's Monitor of pid: no Down for it arrives after
// Demonitor returns.
func (c Client) Demonitor(ctx context.Context, pid PID, watcher *actor.PID) error {
	if watcher == nil {
		return fmt.Errorf("%w: Client.Demonitor of %v needs the watching actor's PID", ErrInvalid, pid)
	}
	r, err := reply[*kernelpb.Demonitored](c.request(ctx, &kernelpb.Demonitor{Pid: uint64(pid), WatcherAddress: watcher.GetAddress(), WatcherId: watcher.GetId()}))
	if err != nil {
		return err
	}
	return errorOf(r.GetFailure())
}

// Charge charges amount of meter to pid's quota account and its
// ancestors', all-or-nothing. A refusal is a *capability.QuotaError
// (errors.As) and has ended pid with reason quota:<meter>.
func (c Client) Charge(ctx context.Context, pid PID, m capability.Meter, amount float64) error {
	r, err := reply[*kernelpb.Charged](c.request(ctx, &kernelpb.Charge{Pid: uint64(pid), Meter: string(m), Amount: amount}))
	if err != nil {
		return err
	}
	return errorOf(r.GetFailure())
}

// Refund gives back amount of meter charged to pid.
func (c Client) Refund(ctx context.Context, pid PID, m capability.Meter, amount float64) error {
	r, err := reply[*kernelpb.Refunded](c.request(ctx, &kernelpb.Refund{Pid: uint64(pid), Meter: string(m), Amount: amount}))
	if err != nil {
		return err
	}
	return errorOf(r.GetFailure())
}

// Refused tells the kernel that a capability check for pid was refused
// (right on resource, err the refusal): the kernel records its "refused"
// event. It is a note: it returns once sent, not once handled.
func (c Client) Refused(pid PID, right capability.Right, resource string, err error) {
	if c.PID == nil || c.Root == nil {
		return
	}
	reason := ""
	if err != nil {
		reason = err.Error()
	}
	m := system.WithToken(&kernelpb.Refused{Pid: uint64(pid), Right: string(right), Resource: resource, Reason: reason}, c.Token)
	c.Root.Send(c.PID, system.Outgoing(c.Root, c.PID, m))
}

// Snapshot asks the kernel to snapshot the process ref (a PID or a
// registered name; see kernelpb.Snapshot), and to kill it in the same step
// when kill is set.
func (c Client) Snapshot(ctx context.Context, ref string, kill bool, by string) (SnapshotInfo, error) {
	m := &kernelpb.Snapshot{Kill: kill, By: by}
	var n uint64
	if _, err := fmt.Sscanf(ref, "%d", &n); err == nil && fmt.Sprint(n) == ref {
		m.Of = &kernelpb.Snapshot_Pid{Pid: n}
	} else {
		m.Of = &kernelpb.Snapshot_Name{Name: ref}
	}
	r, err := reply[*kernelpb.SnapshotTaken](c.request(ctx, m))
	if err != nil {
		return SnapshotInfo{}, err
	}
	if err := errorOf(r.GetFailure()); err != nil {
		return SnapshotInfo{}, err
	}
	return SnapshotInfo{ID: r.GetId(), PID: PID(r.GetPid()), Name: r.GetName(), Image: r.GetImage(), Mailbox: int(r.GetMailbox()), Sealed: r.GetSnapshot()}, nil
}

// Restore asks the kernel to restore the snapshot stored as id in its
// journal (a unique prefix will do), under name ("" : the snapshot's). A
// snapshot restores once (see Kernel.Restore): a second restore fails with
// ErrNotRestorable.
func (c Client) Restore(ctx context.Context, id, name string) (PID, string, error) {
	return c.restore(ctx, &kernelpb.Restore{From: &kernelpb.Restore_Id{Id: id}, Name: name})
}

// RestoreSealed asks the kernel to restore a sealed snapshot carried whole
// (SnapshotInfo.Sealed, Snapshot.Encode): a migration to a node that does
// not share the journal. Its seal MUST verify with that node's authority.
func (c Client) RestoreSealed(ctx context.Context, sealed []byte, name string) (PID, string, error) {
	return c.restore(ctx, &kernelpb.Restore{From: &kernelpb.Restore_Snapshot{Snapshot: sealed}, Name: name})
}

// Fork asks the kernel to restore a copy of the snapshot stored as id
// (kernel.RestoreOptions.Fork): it is not consumed, and it restores even
// when it was restored before or its process still runs. IMPORTANT: the
// copy has the same rights and remaining budget as the original, which are
// thereby duplicated: an operator's decision (agentos restore --fork).
func (c Client) Fork(ctx context.Context, id, name string) (PID, string, error) {
	return c.restore(ctx, &kernelpb.Restore{From: &kernelpb.Restore_Id{Id: id}, Name: name, Fork: true})
}

func (c Client) restore(ctx context.Context, m *kernelpb.Restore) (PID, string, error) {
	r, err := reply[*kernelpb.Restored](c.request(ctx, m))
	if err != nil {
		return 0, "", err
	}
	if err := errorOf(r.GetFailure()); err != nil {
		return 0, "", err
	}
	return PID(r.GetPid()), r.GetName(), nil
}
