package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"google.golang.org/protobuf/proto"

	"github.com/agentos-run/agentos/actors/system"
)

// maxCallAttempt bounds one attempt of Call when ctx has no deadline: a
// grain that neither answers nor dies within it is asked again.
const maxCallAttempt = time.Hour

// Call is Request for a grain that works for long (a forge waits on a
// model for minutes): an attempt is not bounded by Options.RequestTimeout
// but lasts until the grain answers, ctx ends, or the member hosting the
// activation leaves or dies (the topology says so). Then the grain is
// looked up again, re-activated on a member alive, and asked again, so a
// caller never waits on a dead member for longer than the provider takes
// to see it gone.
//
// IMPORTANT: as with Request, msg may be delivered more than once (to the
// dead activation and to the new one): the grain MUST treat a repeated
// message as the same request (the forge grain joins it to the forge in
// flight, or resumes that forge from the journal).
func (m *Member) Call(ctx context.Context, kind, identity string, msg proto.Message) (proto.Message, error) {
	if err := system.CheckRemote(msg); err != nil {
		return nil, err
	}
	if m.isLeft() {
		return nil, ErrLeft
	}
	ci := pcluster.NewClusterIdentity(identity, kind)
	res, err := m.retrying(ctx, ci, func() (any, error) { return m.callOnce(ctx, ci, msg) })
	if err != nil {
		return nil, err
	}
	p, ok := res.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("cluster: grain %s answered a %T, not a protobuf message: answer with a generated message", ci.AsKey(), res)
	}
	return p, nil
}

// errHostGone: the member hosting the activation left while it was asked.
var errHostGone = errors.New("the member hosting the grain left the cluster")

// callOnce asks the grain once and waits for its answer, ctx, the member's
// Leave, or the hosting member's departure.
func (m *Member) callOnce(ctx context.Context, ci *pcluster.ClusterIdentity, msg any) (any, error) {
	pid, err := m.lookup(ci, m.opts.RequestTimeout)
	if err != nil {
		return nil, err
	}
	wait := maxCallAttempt
	if d, ok := ctx.Deadline(); ok {
		wait = max(time.Until(d), time.Millisecond)
	}
	f := system.RequestFuture(ctx, m.root, pid, msg, wait)
	answered := false
	defer func() {
		if !answered {
			// Given up on (host gone, ctx, Leave): complete the future now,
			// not after wait (its timer and registration go with it).
			m.root.Send(f.PID(), &actor.DeadLetterResponse{Target: pid})
		}
	}()
	for {
		gone, changed := m.hostGone(pid)
		if gone {
			return nil, errHostGone
		}
		select {
		case <-f.Done():
			answered = true
			return f.Result()
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-m.life.Done():
			return nil, ErrLeft
		case <-changed:
		}
	}
}

// hostGone reports whether the member at pid's address is no longer alive
// (a local pid's host is this member: never gone), and the channel closed
// at the next topology change.
func (m *Member) hostGone(pid *actor.PID) (bool, chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if pid.Address == m.sys.ActorSystem().Address() || pid.Address == "nonhost" {
		return false, m.changed
	}
	for _, info := range m.members {
		if info.Alive && info.Address == pid.Address {
			return false, m.changed
		}
	}
	return true, m.changed
}

// Send sends msg to the grain (kind, identity) without waiting for an
// answer: where the grain is active now (it is activated when it is not).
// A message that finds the grain gone is lost; use it for what may be lost
// (a caller's cancellation), Request or Call for the rest.
func (m *Member) Send(kind, identity string, msg proto.Message) {
	if err := system.CheckRemote(msg); err != nil || m.isLeft() {
		return
	}
	ci := pcluster.NewClusterIdentity(identity, kind)
	pid, err := m.lookup(ci, m.opts.RequestTimeout)
	if err != nil {
		m.log.Debug("cluster: a message to a grain was dropped", "grain", ci.AsKey(), "err", err)
		return
	}
	m.root.Send(pid, msg)
}
