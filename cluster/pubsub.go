package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"google.golang.org/protobuf/proto"

	"github.com/agentos-run/agentos/actors/system"
)

// Publish delivers msg to every subscriber of topic on every member,
// through protoactor's pub-sub (the topic is a grain of kind
// "prototopic"), and returns once the topic actor has delivered it.
//
// IMPORTANT: delivery is at-least-once when a retry follows a timeout
// (see Request), and a subscriber on a member that has not yet renewed
// its subscription after a topology change may miss a message published
// meanwhile (see Subscribe). msg MUST pass system.CheckRemote.
func (m *Member) Publish(ctx context.Context, topic string, msg proto.Message) error {
	if err := system.CheckRemote(msg); err != nil {
		return err
	}
	res, err := m.request(ctx, pcluster.TopicActorKind, topic, &pcluster.PubSubBatch{Envelopes: []proto.Message{msg}})
	if err != nil {
		return err
	}
	r, ok := res.(*pcluster.PublishResponse)
	if !ok {
		return fmt.Errorf("cluster: publish to %q: the topic answered %T", topic, res)
	}
	if r.Status != pcluster.PublishStatus_Ok {
		return fmt.Errorf("%w: publish to %q: status %v", ErrRequest, topic, r.Status)
	}
	return nil
}

type subscription struct {
	topic string
	pid   *actor.PID
}

// Subscribe calls fn with every message published on topic, one at a
// time, on an actor of this member, until unsubscribe is called or the
// member leaves. fn MUST NOT block for long: it holds up the deliveries
// to this member.
//
// The topic actor keeps its subscribers in memory only: when a topology
// change moves it to another member, the subscribers are lost.
// Subscribe fences that: the member renews its subscriptions after every
// topology change it sees, and every second (renewEvery). IMPORTANT: a
// message published between the loss and the renewal is not delivered to
// that subscriber.
func (m *Member) Subscribe(ctx context.Context, topic string, fn func(proto.Message)) (unsubscribe func(), err error) {
	if m.isLeft() {
		return nil, ErrLeft
	}
	pid, err := m.sys.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if p, ok := c.Message().(proto.Message); ok {
			fn(p)
		}
	}), "subscriber/"+topic+"/"+m.sys.ActorSystem().ProcessRegistry.NextId())
	if err != nil {
		return nil, fmt.Errorf("cluster: subscribe to %q: %w", topic, err)
	}
	s := &subscription{topic: topic, pid: pid}
	if err := m.subscribe(ctx, s); err != nil {
		m.sys.Root().Stop(pid)
		return nil, err
	}
	m.mu.Lock()
	m.subs[s] = struct{}{}
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		_, ok := m.subs[s]
		delete(m.subs, s)
		m.mu.Unlock()
		if !ok {
			return
		}
		uctx, cancel := context.WithTimeout(m.life, m.opts.RequestTimeout)
		defer cancel()
		_, _ = m.request(uctx, pcluster.TopicActorKind, topic, &pcluster.UnsubscribeRequest{
			Subscriber: &pcluster.SubscriberIdentity{Identity: &pcluster.SubscriberIdentity_Pid{Pid: pid}}})
		m.sys.Root().Stop(pid)
	}, nil
}

func (m *Member) subscribe(ctx context.Context, s *subscription) error {
	res, err := m.request(ctx, pcluster.TopicActorKind, s.topic, &pcluster.SubscribeRequest{
		Subscriber: &pcluster.SubscriberIdentity{Identity: &pcluster.SubscriberIdentity_Pid{Pid: s.pid}}})
	if err != nil {
		return fmt.Errorf("cluster: subscribe to %q: %w", s.topic, err)
	}
	if _, ok := res.(*pcluster.SubscribeResponse); !ok {
		return fmt.Errorf("cluster: subscribe to %q: the topic answered %T", s.topic, res)
	}
	return nil
}

// renewEvery is how often the subscriptions are renewed besides after
// every topology change this member sees: a topic actor is also poisoned
// when its own member's view changes (or is briefly partial), which the
// subscriber's member does not see.
const renewEvery = time.Second

// resubscriber renews the subscriptions after every topology change and
// every renewEvery, until Leave.
func (m *Member) resubscriber() {
	defer close(m.done)
	tick := time.NewTicker(renewEvery)
	defer tick.Stop()
	for {
		select {
		case <-m.life.Done():
			return
		case <-m.resub:
		case <-tick.C:
		}
		m.mu.Lock()
		subs := make([]*subscription, 0, len(m.subs))
		for s := range m.subs {
			subs = append(subs, s)
		}
		m.mu.Unlock()
		for _, s := range subs {
			ctx, cancel := context.WithTimeout(m.life, 4*m.opts.RequestTimeout)
			if err := m.subscribe(ctx, s); err != nil && m.life.Err() == nil {
				m.log.Warn("renewing a subscription after a topology change failed; messages on the topic may be missed until the next change",
					slog.String("topic", s.topic), slog.Any("error", err))
			}
			cancel()
		}
	}
}

// stopSubscriptions stops the subscriber actors (Leave on a System the
// member does not own: the owner's shutdown comes later).
func (m *Member) stopSubscriptions() {
	m.mu.Lock()
	pids := make([]*actor.PID, 0, len(m.subs))
	for s := range m.subs {
		pids = append(pids, s.pid)
	}
	clear(m.subs)
	m.mu.Unlock()
	for _, pid := range pids {
		_ = m.sys.Root().StopFuture(pid).Wait()
	}
}
