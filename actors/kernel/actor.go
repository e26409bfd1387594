package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/actors/kernel/kernelpb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
)

// Props returns the props of the kernel actor serving k: the node's
// process-table endpoint (see kernelpb/kernel.proto and Client).
func Props(k *Kernel) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &kernelActor{k: k} })
}

// watchKey names one Monitor: which actor watches which process.
type watchKey struct {
	watcher string // address + "/" + id
	pid     PID
}

// watch is one actor monitoring one process.
type watch struct {
	to   *actor.PID
	p    *Process
	stop func() bool // cancels the AfterFunc on p's context
}

type kernelActor struct {
	k       *Kernel
	watches map[watchKey]watch
}

// Receive is the kernel actor's one message switch. Every request is
// authorized first (auth.go): a refused one is answered with its reply
// type carrying the failure, and nothing is done.
func (a *kernelActor) Receive(ctx actor.Context) {
	msg, local := system.Unwrap(ctx.Message())
	if err := a.authorize(msg, local); err != nil {
		a.refuse(ctx, msg, err)
		return
	}
	switch m := msg.(type) {
	case *kernelpb.PS:
		ctx.Respond(a.onPS())
	case *kernelpb.EventsQuery:
		ctx.Respond(a.onEvents(m))
	case *kernelpb.Signal:
		ctx.Respond(&kernelpb.SignalReply{Failure: failure(a.onSignal(m))})
	case *kernelpb.Spawn:
		a.onSpawn(ctx, m)
	case *kernelpb.Send:
		ctx.Respond(a.onSend(m))
	case *kernelpb.Monitor:
		ctx.Respond(&kernelpb.Monitored{Failure: failure(a.onMonitor(ctx, m))})
	case *kernelpb.Demonitor:
		a.onDemonitor(ctx, m)
		ctx.Respond(&kernelpb.Demonitored{})
	case *exited:
		a.onExited(ctx, m)
	case *kernelpb.Charge:
		ctx.Respond(&kernelpb.Charged{Failure: failure(a.onCharge(m))})
	case *kernelpb.Refund:
		ctx.Respond(&kernelpb.Refunded{Failure: failure(a.onRefund(m))})
	case *kernelpb.Refused:
		a.onRefused(m)
	case *kernelpb.Snapshot:
		ctx.Respond(a.onSnapshot(m))
	case *kernelpb.Restore:
		ctx.Respond(a.onRestore(m))
	case *actor.Stopping, *actor.Restarting:
		a.stopWatches()
	case *actor.Started, *actor.Stopped:
	default:
		ctx.Logger().Warn("kernel: unknown message", slog.String("type", fmt.Sprintf("%T", m)))
	}
}

// refuse answers a request the sender may not make with its reply type
// carrying err (a Refused note has no reply: the refusal is logged).
func (a *kernelActor) refuse(ctx actor.Context, msg any, err error) {
	f := failure(err)
	switch msg.(type) {
	case *kernelpb.PS:
		ctx.Respond(&kernelpb.PSReply{Failure: f})
	case *kernelpb.EventsQuery:
		ctx.Respond(&kernelpb.EventsReply{Failure: f})
	case *kernelpb.Signal:
		ctx.Respond(&kernelpb.SignalReply{Failure: f})
	case *kernelpb.Spawn:
		ctx.Respond(&kernelpb.Spawned{Failure: f})
	case *kernelpb.Send:
		ctx.Respond(&kernelpb.Sent{Failure: f})
	case *kernelpb.Monitor:
		ctx.Respond(&kernelpb.Monitored{Failure: f})
	case *kernelpb.Demonitor:
		ctx.Respond(&kernelpb.Demonitored{Failure: f})
	case *kernelpb.Charge:
		ctx.Respond(&kernelpb.Charged{Failure: f})
	case *kernelpb.Refund:
		ctx.Respond(&kernelpb.Refunded{Failure: f})
	case *kernelpb.Snapshot:
		ctx.Respond(&kernelpb.SnapshotTaken{Failure: f})
	case *kernelpb.Restore:
		ctx.Respond(&kernelpb.Restored{Failure: f})
	default:
		ctx.Logger().Warn("kernel: request refused", slog.String("type", fmt.Sprintf("%T", msg)), slog.Any("err", err))
	}
}

func (a *kernelActor) onPS() *kernelpb.PSReply {
	ps := a.k.PS()
	out := &kernelpb.PSReply{Procs: make([]*kernelpb.ProcInfo, len(ps))}
	for i, in := range ps {
		out.Procs[i] = procInfoPB(in)
	}
	return out
}

func (a *kernelActor) onEvents(m *kernelpb.EventsQuery) *kernelpb.EventsReply {
	evs := a.k.Events(m.GetAfter(), int(max(0, m.GetLimit())))
	out := &kernelpb.EventsReply{Events: make([]*kernelpb.Event, len(evs))}
	for i, e := range evs {
		out.Events[i] = eventPB(e)
	}
	return out
}

func (a *kernelActor) onSignal(m *kernelpb.Signal) error {
	pid := PID(m.GetPid())
	switch m.GetSignal() {
	case "kill":
		return a.k.Kill(pid, m.GetBy())
	case "term":
		return a.k.Terminate(pid, 0)
	case "stop":
		return a.k.Stop(pid)
	case "cont":
		return a.k.Continue(pid)
	default:
		return fmt.Errorf("%w: unknown signal %q (use kill, term, stop or cont)", ErrInvalid, m.GetSignal())
	}
}

// onSpawn answers a Spawn. A spawn on behalf of a parent process waits
// while the parent is stopped (as the parent's own kernel calls do), so it
// runs and answers off the actor's goroutine: the kernel actor MUST keep
// answering (the cont that releases the parent is one of its messages).
func (a *kernelActor) onSpawn(ctx actor.Context, m *kernelpb.Spawn) {
	if m.GetParent() == 0 {
		ctx.Respond(spawned(a.spawn(m)))
		return
	}
	sender, root := ctx.Sender(), ctx.ActorSystem().Root
	go func() {
		reply := spawned(a.spawn(m))
		if sender != nil {
			root.Send(sender, reply)
		}
	}()
}

func spawned(p *Process, err error) *kernelpb.Spawned {
	if err != nil {
		return &kernelpb.Spawned{Failure: failure(err)}
	}
	return &kernelpb.Spawned{Pid: uint64(p.PID())}
}

func (a *kernelActor) spawn(m *kernelpb.Spawn) (*Process, error) {
	main, err := a.k.image(m.GetImage())
	if err != nil {
		return nil, err
	}
	if m.GetDeadlineNs() < 0 {
		return nil, fmt.Errorf("%w: spawn of %q: deadline_ns %d is negative (0: no deadline)", ErrInvalid, m.GetImage(), m.GetDeadlineNs())
	}
	opts := SpawnOptions{
		Name: m.GetName(), Image: m.GetImage(), Quota: capability.Limits(kernelclient.MetersFromPB(m.GetQuota())),
		Link: m.GetLink(), Deadline: time.Duration(m.GetDeadlineNs()),
	}
	for _, g := range m.GetGrants() {
		opts.Grants = append(opts.Grants, capability.Grant{Right: capability.Right(g.GetRight()), Scope: g.GetScope()})
	}
	if m.GetParent() == 0 {
		if opts.Link {
			return nil, fmt.Errorf("%w: spawn of %q: link needs a parent process (set parent)", ErrInvalid, m.GetImage())
		}
		return a.k.Spawn(main, opts)
	}
	parent := a.k.Process(PID(m.GetParent()))
	if parent == nil {
		return nil, fmt.Errorf("%w: spawn of %q: parent %v is not alive", ErrNoProcess, m.GetImage(), PID(m.GetParent()))
	}
	return parent.Spawn(main, opts)
}

func (a *kernelActor) onSend(m *kernelpb.Send) *kernelpb.Sent {
	var pid PID
	switch to := m.GetTo().(type) {
	case *kernelpb.Send_Pid:
		pid = PID(to.Pid)
	case *kernelpb.Send_Name:
		var ok bool
		if pid, ok = a.k.Lookup(to.Name); !ok {
			return &kernelpb.Sent{Failure: failure(fmt.Errorf("%w: no process is registered as %q (agentos ps lists the names)", ErrNoProcess, to.Name))}
		}
	default:
		return &kernelpb.Sent{Failure: failure(fmt.Errorf("%w: send names no process (set pid or name)", ErrInvalid))}
	}
	if !json.Valid(m.GetBody()) {
		return &kernelpb.Sent{Failure: failure(fmt.Errorf("%w: send to %v: the body is not JSON", ErrInvalid, pid))}
	}
	if err := a.k.Send(pid, json.RawMessage(bytes.Clone(m.GetBody()))); err != nil {
		return &kernelpb.Sent{Failure: failure(err)}
	}
	return &kernelpb.Sent{Pid: uint64(pid)}
}

// watcher returns the actor named by address and id, else the sender.
func watcher(ctx actor.Context, address, id string) *actor.PID {
	if id != "" {
		if address == "" {
			address = ctx.Self().GetAddress()
		}
		return actor.NewPID(address, id)
	}
	return ctx.Sender()
}

func keyOf(to *actor.PID, pid PID) watchKey {
	return watchKey{watcher: to.GetAddress() + "/" + to.GetId(), pid: pid}
}

func (a *kernelActor) onMonitor(ctx actor.Context, m *kernelpb.Monitor) error {
	to := watcher(ctx, m.GetWatcherAddress(), m.GetWatcherId())
	if to == nil {
		return fmt.Errorf("%w: monitor of %v names no watcher: send it with Request from the watching actor, or set watcher_id", ErrInvalid, PID(m.GetPid()))
	}
	pid := PID(m.GetPid())
	p := a.k.Process(pid)
	if p == nil {
		ctx.Send(to, &kernelpb.Down{Pid: uint64(pid), Reason: string(NoProc), ReasonKind: string(NoProc)})
		return nil
	}
	key := keyOf(to, pid)
	if _, ok := a.watches[key]; ok {
		return nil // one Down per watcher and process
	}
	if a.watches == nil {
		a.watches = map[watchKey]watch{}
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	stop := context.AfterFunc(p.Context(), func() { root.Send(self, &exited{pid: pid, key: key}) })
	a.watches[key] = watch{to: to, p: p, stop: stop}
	return nil
}

func (a *kernelActor) onDemonitor(ctx actor.Context, m *kernelpb.Demonitor) {
	to := watcher(ctx, m.GetWatcherAddress(), m.GetWatcherId())
	if to == nil {
		return
	}
	key := keyOf(to, PID(m.GetPid()))
	if w, ok := a.watches[key]; ok {
		w.stop()
		delete(a.watches, key)
	}
}

func (a *kernelActor) onExited(ctx actor.Context, m *exited) {
	w, ok := a.watches[m.key]
	if !ok {
		return // demonitored before the note arrived
	}
	delete(a.watches, m.key)
	r, _ := w.p.Reason()
	ctx.Send(w.to, &kernelpb.Down{Pid: uint64(m.pid), Name: w.p.Name(), Reason: r.String(), ReasonKind: string(r.Kind)})
}

func (a *kernelActor) stopWatches() {
	for key, w := range a.watches {
		w.stop()
		delete(a.watches, key)
	}
}

func (a *kernelActor) process(pid PID, what string) (*Process, error) {
	p := a.k.Process(pid)
	if p == nil {
		return nil, fmt.Errorf("%w: %s of %v: the process is not alive", ErrNoProcess, what, pid)
	}
	return p, nil
}

func (a *kernelActor) onCharge(m *kernelpb.Charge) error {
	if m.GetMeter() == "" || m.GetAmount() < 0 {
		return fmt.Errorf("%w: charge of %g %q: name a meter and a non-negative amount (use Refund to give back)", ErrInvalid, m.GetAmount(), m.GetMeter())
	}
	p, err := a.process(PID(m.GetPid()), "charge")
	if err != nil {
		return err
	}
	return p.Charge(capability.Meter(m.GetMeter()), m.GetAmount())
}

func (a *kernelActor) onRefund(m *kernelpb.Refund) error {
	if m.GetMeter() == "" || m.GetAmount() < 0 {
		return fmt.Errorf("%w: refund of %g %q: name a meter and a non-negative amount", ErrInvalid, m.GetAmount(), m.GetMeter())
	}
	p, err := a.process(PID(m.GetPid()), "refund")
	if err != nil {
		return err
	}
	p.Account().Refund(capability.Meter(m.GetMeter()), m.GetAmount())
	return nil
}

func (a *kernelActor) onRefused(m *kernelpb.Refused) {
	err := errors.New(m.GetReason())
	if p := a.k.Process(PID(m.GetPid())); p != nil {
		a.k.refused(p, capability.Right(m.GetRight()), m.GetResource(), err)
		return
	}
	a.k.emit(&Event{Kind: EventRefused, PID: PID(m.GetPid()), Detail: refusedDetail(capability.Right(m.GetRight()), m.GetResource(), err)})
}

// onSnapshot answers a Snapshot. It stores the snapshot in the node's
// journal on the actor's goroutine: one durable write, no wait on a process.
func (a *kernelActor) onSnapshot(m *kernelpb.Snapshot) *kernelpb.SnapshotTaken {
	var pid PID
	switch of := m.GetOf().(type) {
	case *kernelpb.Snapshot_Pid:
		pid = PID(of.Pid)
	case *kernelpb.Snapshot_Name:
		var ok bool
		if pid, ok = a.k.Lookup(of.Name); !ok {
			return &kernelpb.SnapshotTaken{Failure: failure(fmt.Errorf("%w: no process is registered as %q (agentos ps lists the names)", ErrNoProcess, of.Name))}
		}
	default:
		return &kernelpb.SnapshotTaken{Failure: failure(fmt.Errorf("%w: snapshot names no process (set pid or name)", ErrInvalid))}
	}
	s, id, err := a.k.Snapshot(context.Background(), pid, SnapshotOptions{Kill: m.GetKill(), By: m.GetBy()})
	if err != nil {
		return &kernelpb.SnapshotTaken{Failure: failure(err)}
	}
	return &kernelpb.SnapshotTaken{Id: id, Snapshot: s.Encode(), Pid: uint64(s.PID), Name: s.Name, Image: s.Image, Mailbox: int64(len(s.Mailbox))}
}

// onRestore answers a Restore.
func (a *kernelActor) onRestore(m *kernelpb.Restore) *kernelpb.Restored {
	var s *Snapshot
	var err error
	switch from := m.GetFrom().(type) {
	case *kernelpb.Restore_Id:
		s, err = a.k.LoadSnapshot(context.Background(), from.Id)
	case *kernelpb.Restore_Snapshot:
		s, err = DecodeSnapshot(from.Snapshot)
	default:
		err = fmt.Errorf("%w: restore names no snapshot (set id or snapshot)", ErrInvalid)
	}
	if err != nil {
		return &kernelpb.Restored{Failure: failure(err)}
	}
	// The kernel actor is the node operator's endpoint (the admin socket,
	// cluster peers sharing the key): it may fork, as it may spawn a root
	// process with any grant. No process reaches it through a kernel tool.
	p, err := a.k.Restore(s, RestoreOptions{Name: m.GetName(), Fork: m.GetFork()})
	if err != nil {
		return &kernelpb.Restored{Failure: failure(err)}
	}
	return &kernelpb.Restored{Pid: uint64(p.PID()), Name: p.Name()}
}
