package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/agentos-run/agentos/actors/system"
)

// Member is this process's member of a protoactor cluster: its own actor
// system, remote and cluster. Its methods are safe for concurrent use.
type Member struct {
	opts Options
	log  *slog.Logger
	sys  *system.System
	// ownSys: the member made sys, and Leave shuts it down.
	ownSys bool
	c      *pcluster.Cluster
	root   *actor.RootContext
	prov   provider
	admit  *admission // nil without TLS
	topo   *eventstream.Subscription
	life   context.Context // ends at Leave
	stop   context.CancelFunc
	resub  chan struct{} // a topology change asks the subscriptions to be renewed

	mu          sync.Mutex
	self        string                // this member's id, once seen in a topology
	members     map[string]MemberInfo // by id, alive and left
	rdv         *pcluster.Rendezvous  // placement over the alive members
	changed     chan struct{}         // closed and replaced at every topology change
	activations map[string]Activation // by kind/identity, held here
	subs        map[*subscription]struct{}
	left        bool

	leaveOnce sync.Once
	leaveErr  error
	done      chan struct{} // closed when the resubscriber has returned
}

// MemberInfo is one member as this member sees it.
type MemberInfo struct {
	// ID is the member's id in the cluster (the provider's: the actor
	// system id for seeds, "<cluster>@<system id>" for etcd).
	ID string
	// Address is the member's remote host:port.
	Address string
	// Kinds are the cluster kinds it hosts (protoactor's pub-sub topic
	// kind "prototopic" included).
	Kinds []string
	// Alive is false once the member has left or died.
	Alive bool
}

// Activation is a grain activation held by this member.
type Activation struct {
	Kind, Identity string
}

// Status is a snapshot of what this member sees.
type Status struct {
	// Self is this member's id ("" until the provider has reported it).
	Self string
	// Address is this member's remote host:port.
	Address string
	// Members are the members seen, alive and left, sorted by ID.
	Members []MemberInfo
	// Activations are the grain activations this member holds, sorted.
	Activations []Activation
}

// Alive returns the members of s that are alive.
func (s Status) Alive() []MemberInfo {
	var out []MemberInfo
	for _, m := range s.Members {
		if m.Alive {
			out = append(out, m)
		}
	}
	return out
}

// provider is a membership provider as Join builds it.
type provider interface {
	pcluster.ClusterProvider
	// close releases what the provider holds beyond protoactor's
	// Shutdown (listeners, clients).
	close()
}

// guardDecode installs recoverStream; only the test that shows
// protoactor's raw behaviour turns it off.
var guardDecode = true

// connectAttempts is the remote's MaxRetryCount (see Join); 0 leaves
// protoactor's default (5), for the test that shows its behaviour.
var connectAttempts = 1

// Join starts an actor system, its remote on opts.Host:opts.Port and a
// cluster member with opts.Kinds, and joins the cluster through the
// provider. It returns once the member has started; the other members
// are seen asynchronously (WaitMembers).
//
// IMPORTANT: Join takes at least one second: protoactor's StartMember
// sleeps 1 s unconditionally. Start several members concurrently.
// The caller MUST call Leave.
func Join(ctx context.Context, opts Options) (*Member, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	var tc *tlsConfigs
	if opts.TLS.enabled() {
		if tc, err = opts.TLS.load(); err != nil {
			return nil, err
		}
	}
	sys, own := opts.System, opts.System == nil
	if own {
		sys = system.New(system.Options{Logger: opts.Logger, Level: opts.Level})
	}
	m := &Member{
		opts:        opts,
		log:         opts.Logger.With(slog.String("component", "cluster")),
		sys:         sys,
		ownSys:      own,
		root:        sys.Root(),
		resub:       make(chan struct{}, 1),
		members:     map[string]MemberInfo{},
		rdv:         pcluster.NewRendezvous(),
		changed:     make(chan struct{}),
		activations: map[string]Activation{},
		subs:        map[*subscription]struct{}{},
		done:        make(chan struct{}),
	}
	m.life, m.stop = context.WithCancel(context.Background())
	if tc != nil {
		m.admit = newAdmission(tc, m.log, m.Address, m.blockStranger)
	}

	prov, err := newProvider(ctx, opts, tc)
	if err != nil {
		m.stop()
		if own {
			_ = sys.Shutdown(time.Second)
		}
		return nil, err
	}
	m.prov = prov

	rcfg := remoteConfig(opts, tc, m.log)
	cfg := pcluster.Configure(opts.Name, prov, disthash.New(), rcfg,
		pcluster.WithKinds(m.kinds()...),
		pcluster.WithRequestTimeout(opts.RequestTimeout))
	m.c = pcluster.New(sys.ActorSystem(), cfg)
	// Subscribe before the start: the provider publishes the first
	// topology from StartMember.
	m.topo = sys.ActorSystem().EventStream.Subscribe(m.onEvent)

	if err := m.start(); err != nil {
		m.abandon()
		return nil, err
	}
	go m.resubscriber()
	m.log.Info("joined the cluster", slog.String("cluster", opts.Name), slog.String("address", m.Address()),
		slog.String("provider", opts.Provider))
	return m, nil
}

// newProvider is the cluster provider opts names, reaching the other
// members over TLS when tc is not nil.
func newProvider(ctx context.Context, opts Options, tc *tlsConfigs) (provider, error) {
	switch opts.Provider {
	case ProviderSeeds:
		return newSeedsProvider(opts, tc)
	case ProviderEtcd:
		return newEtcdProvider(ctx, opts, tc)
	}
	return nil, fmt.Errorf("%w: unknown provider %q", ErrOptions, opts.Provider)
}

// remoteConfig is the configuration of a member's remote: its address,
// mutual TLS when tc is not nil, the decode guard, and one connection
// attempt per endpoint writer.
func remoteConfig(opts Options, tc *tlsConfigs, log *slog.Logger) *remote.Config {
	ropts := []remote.ConfigOption{
		remote.WithAdvertisedHost(opts.AdvertisedAddress),
	}
	var sopts []grpc.ServerOption
	if guardDecode {
		sopts = append(sopts, grpc.StreamInterceptor(recoverStream(log)))
	}
	if tc != nil {
		// Mutual TLS: the server requires a client certificate signed by
		// the CA, the dialer presents ours and verifies the server's
		// (protoactor's default dial option is grpc.WithInsecure).
		creds, dial := tc.grpcOptions()
		sopts = append(sopts, creds...)
		ropts = append(ropts, remote.WithDialOptions(dial...))
	}
	if len(sopts) > 0 {
		ropts = append(ropts, remote.WithServerOptions(sopts...))
	}
	rcfg := remote.Configure(opts.Host, opts.Port, ropts...)
	// protoactor's endpoint writer makes MaxRetryCount connection
	// attempts (default 5), sleeping 2 s after each failure, inside its
	// Started handler, and closes only the last attempt's gRPC
	// connection: every failed attempt leaves a connection redialing
	// forever, and a member that sent to a member that has just gone
	// cannot stop its remote for 10 s. One attempt: its connection is
	// closed when the writer stops, and the next message to that address
	// starts a new writer anyway.
	if connectAttempts > 0 {
		rcfg.MaxRetryCount = connectAttempts
	}
	return rcfg
}

// kinds are the member's cluster kinds, each tracked (see tracked): its
// Options.Kinds and protoactor's own topic kind (as
// ensureTopicKindRegistered builds it), so that Status lists the topics
// held here.
func (m *Member) kinds() []*pcluster.Kind {
	kinds := make([]*pcluster.Kind, 0, len(m.opts.Kinds)+1)
	for _, k := range m.opts.Kinds {
		kinds = append(kinds, pcluster.NewKind(k.Name, m.tracked(k.Props)))
	}
	return append(kinds, pcluster.NewKind(pcluster.TopicActorKind, m.tracked(actor.PropsFromProducer(func() actor.Actor {
		return pcluster.NewTopicActor(&pcluster.EmptyKeyValueStore[*pcluster.Subscribers]{}, m.sys.ActorSystem().Logger())
	}))))
}

// abandon undoes a Join whose member failed to start: admission, the
// topology subscription, the remote, the provider, and the actor system
// when the member owns it.
func (m *Member) abandon() {
	m.stop()
	if m.admit != nil {
		m.admit.stop()
	}
	sys := m.sys
	sys.ActorSystem().EventStream.Unsubscribe(m.topo)
	if m.c.Remote != nil && sys.ActorSystem().Address() != "nonhost" {
		m.c.Remote.Shutdown(false)
	}
	m.prov.close()
	if m.ownSys {
		_ = sys.Shutdown(time.Second)
	}
}

// start runs protoactor's StartMember, which reports failures by panicking.
func (m *Member) start() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: protoactor's StartMember failed: %v (is the port %d free? is the provider reachable?)", ErrJoin, r, m.opts.Port)
		}
	}()
	m.c.StartMember()
	return nil
}

// System returns the member's protoactor actor system.
//
// IMPORTANT: do not call its Shutdown (Leave does), and spawn the
// member's long-lived actors through SystemWrapper().Spawn so that Leave
// stops them.
func (m *Member) System() *actor.ActorSystem { return m.sys.ActorSystem() }

// SystemWrapper returns the fenced actor system (actors/system) the member
// runs on: Leave shuts it down, stopping the actors spawned through it.
func (m *Member) SystemWrapper() *system.System { return m.sys }

// Cluster returns protoactor's cluster, for what this package does not
// wrap. IMPORTANT: do not call its Shutdown (it stops no actor and sleeps
// 2 s; call Leave) nor its Request (no fence for topology changes; call
// Member.Request).
func (m *Member) Cluster() *pcluster.Cluster { return m.c }

// Address returns the member's remote host:port.
func (m *Member) Address() string { return m.sys.ActorSystem().Address() }

// HealthAddress returns the host:port of the member's health endpoint
// (ProviderSeeds; "" for etcd): the address to list in other members'
// Seeds.
func (m *Member) HealthAddress() string {
	if s, ok := m.prov.(*seedsProvider); ok {
		return s.addr
	}
	return ""
}

// onEvent follows the cluster topology published on the event stream.
// IMPORTANT: it runs on the publisher's goroutine, under the member
// list's lock: it MUST NOT call into the cluster.
func (m *Member) onEvent(evt any) {
	t, ok := evt.(*pcluster.ClusterTopology)
	if !ok {
		return
	}
	if m.admit != nil { // TLS: only the members that proved their certificate
		m.admit.apply(t, m.applyTopology)
		return
	}
	m.applyTopology(t.Members, t.Left)
}

// applyTopology makes members (and left) this member's view.
func (m *Member) applyTopology(members, left []*pcluster.Member) {
	m.mu.Lock()
	for _, mem := range left {
		info := infoOf(mem)
		info.Alive = false
		m.members[mem.Id] = info
	}
	alive := map[string]bool{}
	for _, mem := range members {
		alive[mem.Id] = true
		m.members[mem.Id] = infoOf(mem)
		if mem.Address() == m.sys.ActorSystem().Address() {
			m.self = mem.Id
		}
	}
	for id, info := range m.members { // a provider may drop a member without a Left entry
		if info.Alive && !alive[id] {
			info.Alive = false
			m.members[id] = info
		}
	}
	rdv := pcluster.NewRendezvous()
	rdv.UpdateMembers(members)
	m.rdv = rdv
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
	select {
	case m.resub <- struct{}{}:
	default:
	}
}

func infoOf(mem *pcluster.Member) MemberInfo {
	return MemberInfo{ID: mem.Id, Address: mem.Address(), Kinds: append([]string(nil), mem.Kinds...), Alive: true}
}

// Status returns what the member sees now.
func (m *Member) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Status{Self: m.self, Address: m.Address()}
	for _, info := range m.members {
		info.Kinds = append([]string(nil), info.Kinds...)
		s.Members = append(s.Members, info)
	}
	sort.Slice(s.Members, func(i, j int) bool { return s.Members[i].ID < s.Members[j].ID })
	for _, a := range m.activations {
		s.Activations = append(s.Activations, a)
	}
	sort.Slice(s.Activations, func(i, j int) bool {
		if s.Activations[i].Kind != s.Activations[j].Kind {
			return s.Activations[i].Kind < s.Activations[j].Kind
		}
		return s.Activations[i].Identity < s.Activations[j].Identity
	})
	return s
}

// WaitMembers returns once the member sees at least n alive members
// (itself included), or ctx's error. It watches the topology protoactor
// publishes on the event stream; it does not use TopologyConsensus, which
// never reports consensus with this protoactor version (see
// docs/CLUSTER.md).
func (m *Member) WaitMembers(ctx context.Context, n int) error {
	for {
		m.mu.Lock()
		alive := 0
		for _, info := range m.members {
			if info.Alive {
				alive++
			}
		}
		changed, left := m.changed, m.left
		m.mu.Unlock()
		if left {
			return ErrLeft
		}
		if alive >= n {
			return nil
		}
		select {
		case <-changed:
		case <-m.life.Done():
			return ErrLeft
		case <-ctx.Done():
			return fmt.Errorf("cluster: %d of %d members seen when the wait ended: %w (are the others up, with this member's cluster name %q and seeds/etcd?)",
				alive, n, ctx.Err(), m.opts.Name)
		}
	}
}

// tracked wraps a kind's props: the member knows its activations, and an
// activation placed here by a member whose view of the cluster is stale
// (protoactor's placement actor activates whatever it is asked, and
// re-checks ownership only at topology changes, so such a duplicate
// would live on) stops at once, before its actor sees any message: the
// caller's Request gets a dead letter and looks the grain up again.
func (m *Member) tracked(props *actor.Props) *actor.Props {
	var misplaced sync.Map // actor id -> struct{}: activations refused here
	return props.Clone(actor.WithReceiverMiddleware(func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			id := c.Self().Id
			switch env.Message.(type) {
			case *actor.Started:
				ci := clusterIdentity(c)
				if ci != nil && !m.owns(ci) {
					misplaced.Store(id, struct{}{})
					m.root.Stop(c.Self())
					return
				}
				if ci != nil {
					m.mu.Lock()
					m.activations[ci.AsKey()] = Activation{Kind: ci.Kind, Identity: ci.Identity}
					m.mu.Unlock()
				}
			case *actor.Stopped:
				if _, ok := misplaced.LoadAndDelete(id); ok {
					return
				}
				if ci := clusterIdentity(c); ci != nil {
					m.mu.Lock()
					delete(m.activations, ci.AsKey())
					m.mu.Unlock()
				}
			}
			if _, ok := misplaced.Load(id); ok {
				return // ClusterInit, Stopping, user messages of a refused activation
			}
			next(c, env)
		}
	}))
}

// owns reports whether this member is the owner of ci in its latest view
// (true when it has no view yet: nothing to judge by).
func (m *Member) owns(ci *pcluster.ClusterIdentity) bool {
	m.mu.Lock()
	rdv := m.rdv
	m.mu.Unlock()
	owner := rdv.GetByClusterIdentity(ci)
	return owner == "" || owner == m.sys.ActorSystem().Address()
}

func clusterIdentity(c actor.ReceiverContext) *pcluster.ClusterIdentity {
	ci, _ := c.Get((&pcluster.ClusterIdentity{}).ExtensionID()).(*pcluster.ClusterIdentity)
	return ci
}

// Leave leaves the cluster gracefully and stops the member: it tells the
// others (gossip state and provider deregistration), stops the grain
// activations and every actor spawned through SystemWrapper, then the
// gossip and the remote. It is bounded by ctx: a step still running when
// ctx ends is abandoned and the error wraps ErrLeaveTimeout.
//
// Leave is idempotent: every call returns the first call's result.
//
// Unlike protoactor's Cluster.Shutdown it stops the actors and does not
// sleep 2 s.
func (m *Member) Leave(ctx context.Context) error {
	m.leaveOnce.Do(func() { m.leaveErr = m.leave(ctx) })
	return m.leaveErr
}

func (m *Member) leave(ctx context.Context) error {
	m.mu.Lock()
	m.left = true
	m.mu.Unlock()
	m.stop()
	<-m.done
	if m.admit != nil {
		m.admit.stop()
	}
	var errs []error
	step := func(name string, f func() error) {
		if ctx.Err() != nil {
			errs = append(errs, fmt.Errorf("%w: %s skipped: %v", ErrLeaveTimeout, name, ctx.Err()))
			return
		}
		ch := make(chan error, 1)
		t0 := time.Now()
		defer func() { m.log.Debug("leave step", slog.String("step", name), slog.Duration("took", time.Since(t0))) }()
		go func() {
			// protoactor's endpoint manager can send on a channel an
			// endpoint reader has just closed (a race -race reports):
			// a panic in a step is an error of Leave, not a crash.
			defer func() {
				if r := recover(); r != nil {
					ch <- fmt.Errorf("cluster: leave step %s panicked inside protoactor: %v", name, r)
				}
			}()
			ch <- f()
		}()
		select {
		case err := <-ch:
			if err != nil {
				errs = append(errs, err)
			}
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("%w: %s still running when the context ended: %v", ErrLeaveTimeout, name, ctx.Err()))
		}
	}
	step("announce", func() error { m.c.Gossip.SetState(pcluster.GracefullyLeftKey, &emptypb.Empty{}); return nil })
	step("deregister", func() error {
		if err := m.prov.Shutdown(true); err != nil {
			return fmt.Errorf("cluster: deregistering from the provider: %w", err)
		}
		return nil
	})
	step("stop grains", func() error { m.c.IdentityLookup.Shutdown(); return nil })
	m.sys.ActorSystem().EventStream.Unsubscribe(m.topo)
	if m.ownSys {
		step("stop actors", func() error {
			timeout := system.DefaultStopTimeout
			if d, ok := ctx.Deadline(); ok {
				timeout = time.Until(d)
			}
			return m.sys.Shutdown(timeout)
		})
	} else {
		step("stop subscriptions", func() error { m.stopSubscriptions(); return nil })
	}
	step("stop gossip", func() error { m.c.Gossip.Shutdown(); return nil })
	step("stop remote", m.stopRemote)
	m.prov.close()
	return errors.Join(errs...)
}

// remoteGrace is how long Leave lets the remote's graceful stop wait for
// the peers to close their streams to this member. A peer that is paused
// or cut off never does: protoactor would wait 10 s for it.
const remoteGrace = 2 * time.Second

// stopRemote stops protoactor's remote gracefully (the peers are told to
// disconnect and their streams drain) for at most remoteGrace, then
// outright: IMPORTANT: a silent peer MUST NOT hold this member's leave.
func (m *Member) stopRemote() error {
	graceful := make(chan struct{})
	go func() {
		defer close(graceful)
		defer func() {
			if r := recover(); r != nil {
				// protoactor's endpoint manager sent on the channel of an
				// endpoint reader that had just closed it (one of its
				// races): its graceful stop ended before stopping the gRPC
				// server. Stop the server.
				m.log.Warn("protoactor's remote shutdown panicked; stopping its server outright", slog.Any("panic", r))
				m.c.Remote.Shutdown(false)
			}
		}()
		m.c.Remote.Shutdown(true)
	}()
	t := time.NewTimer(remoteGrace)
	defer t.Stop()
	select {
	case <-graceful:
		return nil
	case <-t.C:
	}
	m.log.Info("a peer did not close its stream to this member in time (paused or cut off?); stopping the remote outright",
		slog.Duration("grace", remoteGrace))
	m.c.Remote.Shutdown(false)
	<-graceful
	return nil
}
