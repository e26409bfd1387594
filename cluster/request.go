package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"

	"github.com/agentos-run/agentos/actors/system"
)

// Backoff bounds between the attempts of Request.
const (
	minBackoff = 10 * time.Millisecond
	maxBackoff = 500 * time.Millisecond
)

// Request sends msg to the grain (kind, identity), activating it where
// the cluster places it, and returns its answer.
//
// It fences protoactor's grain calls across topology changes: when a
// member joins or leaves, disthash poisons the activations that now
// belong elsewhere, and a call sent to the old activation hits a dead
// letter or times out. Request then drops the cached PID, looks the grain
// up again and retries, with a backoff from 10 ms doubling to 500 ms,
// each attempt bounded by Options.RequestTimeout, until ctx ends.
//
// IMPORTANT: a retry after a timeout may deliver msg twice (the first
// attempt may have been handled, its answer lost): grain messages MUST be
// idempotent, or the caller MUST accept at-least-once delivery. msg MUST
// pass system.CheckRemote (a generated protobuf message linked into every
// node); the answer MUST be a protobuf message.
func (m *Member) Request(ctx context.Context, kind, identity string, msg proto.Message) (proto.Message, error) {
	if err := system.CheckRemote(msg); err != nil {
		return nil, err
	}
	res, err := m.request(ctx, kind, identity, msg)
	if err != nil {
		return nil, err
	}
	p, ok := res.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("cluster: grain %s/%s answered a %T, not a protobuf message: answer with a generated message", kind, identity, res)
	}
	return p, nil
}

// request is Request for any message (protoactor's pub-sub messages are
// not proto.Message themselves).
func (m *Member) request(ctx context.Context, kind, identity string, msg any) (any, error) {
	if m.isLeft() {
		return nil, ErrLeft
	}
	ci := pcluster.NewClusterIdentity(identity, kind)
	return m.retrying(ctx, ci, func() (any, error) {
		timeout := m.opts.RequestTimeout
		if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
			timeout = time.Until(d)
		}
		if timeout <= 0 {
			return nil, context.DeadlineExceeded
		}
		return m.attempt(ctx, ci, msg, timeout)
	})
}

// retrying runs once until it succeeds, fails with an error a fresh
// lookup cannot cure, ctx ends or the member leaves; between two attempts
// it drops the grain's cached PID and waits, from 10 ms doubling to
// 500 ms.
func (m *Member) retrying(ctx context.Context, ci *pcluster.ClusterIdentity, once func() (any, error)) (any, error) {
	backoff := minBackoff
	var last error
	for attempt := 1; ; attempt++ {
		if ctx.Err() != nil {
			return nil, m.requestErr(ctx, ci, attempt-1, last)
		}
		res, err := once()
		if err == nil {
			return res, nil
		}
		if !retryable(err) {
			if ctx.Err() != nil {
				return nil, m.requestErr(ctx, ci, attempt, last)
			}
			return nil, err
		}
		last = err
		m.c.PidCache.Remove(ci.Identity, ci.Kind)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, m.requestErr(ctx, ci, attempt, last)
		case <-m.life.Done():
			t.Stop()
			return nil, ErrLeft
		case <-t.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

func (m *Member) requestErr(ctx context.Context, ci *pcluster.ClusterIdentity, attempts int, last error) error {
	if errors.Is(last, errNoOwner) {
		return fmt.Errorf("%w %q (identity %q): no alive member lists it (%d attempts; %v): join a member with this kind",
			ErrNoMember, ci.Kind, ci.Identity, attempts, ctx.Err())
	}
	return fmt.Errorf("%w: %s after %d attempt(s), last: %v (%v): is the grain blocked, or the cluster still changing?",
		ErrRequest, ci.AsKey(), attempts, last, ctx.Err())
}

var errNoOwner = errors.New("no member hosts the kind")

// attempt looks the grain's PID up (cached, or asked of the owner's
// placement actor) and sends it msg once.
func (m *Member) attempt(ctx context.Context, ci *pcluster.ClusterIdentity, msg any, timeout time.Duration) (any, error) {
	pid, err := m.lookup(ci, timeout)
	if err != nil {
		return nil, err
	}
	return system.RequestFuture(ctx, m.root, pid, msg, timeout).Result()
}

// lookup is disthash's IdentityLookup.Get with our bound instead of its
// fixed 5 s, and our own placement table (disthash's is replaced without
// synchronization on every topology change: a data race).
func (m *Member) lookup(ci *pcluster.ClusterIdentity, timeout time.Duration) (*actor.PID, error) {
	if pid, ok := m.c.PidCache.Get(ci.Identity, ci.Kind); ok && pid != nil {
		return pid, nil
	}
	m.mu.Lock()
	rdv := m.rdv
	m.mu.Unlock()
	owner := rdv.GetByClusterIdentity(ci)
	if owner == "" {
		return nil, errNoOwner
	}
	res, err := m.root.RequestFuture(actor.NewPID(owner, disthash.PartitionActivatorActorName),
		&pcluster.ActivationRequest{ClusterIdentity: ci}, timeout).Result()
	if err != nil {
		return nil, err
	}
	r, ok := res.(*pcluster.ActivationResponse)
	if !ok || r.Pid == nil {
		return nil, fmt.Errorf("%w: %s: the owner %s did not activate it (%T)", errNoOwner, ci.AsKey(), owner, res)
	}
	m.c.PidCache.Set(ci.Identity, ci.Kind, r.Pid)
	return r.Pid, nil
}

// retryable reports whether err is one a fresh lookup may cure.
func retryable(err error) bool {
	return errors.Is(err, actor.ErrTimeout) || errors.Is(err, actor.ErrDeadLetter) ||
		errors.Is(err, remote.ErrTimeout) || errors.Is(err, remote.ErrDeadLetter) || errors.Is(err, errNoOwner) ||
		errors.Is(err, errHostGone)
}

func (m *Member) isLeft() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.left
}
