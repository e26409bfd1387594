package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdLeaseTTL is the lease a member's etcd registration lives under: a
// member that stops renewing it (dead, paused, cut off from etcd) is
// dropped by the others when it expires.
const etcdLeaseTTL = 3 * time.Second

// etcdResync is how often a member re-reads the whole member list from
// etcd besides at every watch event, and retries etcd after a failure.
const etcdResync = time.Second

// etcdNode is a member's registration, in the JSON protoactor's etcd
// provider writes (members of either read each other's keys).
type etcdNode struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Host    string   `json:"host"`
	Address string   `json:"address"`
	Port    int      `json:"port"`
	Kinds   []string `json:"kinds"`
	Alive   bool     `json:"alive"`
}

// etcdProvider is the etcd membership provider. It replaces protoactor's,
// which never heals (docs/CLUSTER.md, defects 13 and 14): its member list
// is built from watch events only, so a missed event is missed for good;
// a member whose lease lapsed (etcd unreachable, the process paused)
// re-registers under the same id, which every member that saw it leave
// has blocked for good, and sees its own key deleted, so it lists itself
// as left.
//
// Here etcd is the truth: the member list published to protoactor is
// always the whole of a successful read of the cluster's keys (at every
// watch event and every etcdResync), plus this member. While etcd does not
// answer the last list stays. A member whose lease lapsed, or whose key
// is gone, registers again under a new id ("<cluster>@<system id>#<n>"),
// which no member has blocked, and says so in its log.
type etcdProvider struct {
	cli         *clientv3.Client
	prefix      string
	dialTimeout time.Duration
	log         *slog.Logger
	ctx         context.Context // ends at Shutdown or close
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	expelled    chan string   // cap 1: a read found this id's key gone
	kick        chan struct{} // cap 1: read the member list now
	stopOnce    sync.Once

	// Set by StartMember.
	c    *pcluster.Cluster
	dir  string   // "<prefix>/<cluster>/": every member's key is under it
	base etcdNode // this member, without its id

	mu     sync.Mutex
	n      int              // registrations made (the id's incarnation)
	self   etcdNode         // this member as registered last
	lease  clientv3.LeaseID // of self's key
	putRev int64            // etcd revision of self's last put
	shown  []string         // ids of the member list published last, sorted
	down   time.Time        // since when etcd does not answer (zero: it does)
}

func newEtcdProvider(ctx context.Context, opts Options, tc *tlsConfigs) (*etcdProvider, error) {
	cfg := clientv3.Config{Endpoints: opts.Etcd.Endpoints, DialTimeout: opts.Etcd.DialTimeout, Logger: zap.NewNop()}
	if tc != nil && strings.HasPrefix(opts.Etcd.Endpoints[0], "https://") {
		cfg.TLS = tc.etcd // etcd run with --client-cert-auth admits members only
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: etcd client for %v: %v", ErrJoin, opts.Etcd.Endpoints, err)
	}
	pctx, cancel := context.WithTimeout(ctx, opts.Etcd.DialTimeout)
	_, err = cli.Get(pctx, opts.Etcd.Prefix, clientv3.WithCountOnly())
	cancel()
	if err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("%w: etcd at %v did not answer within %v: %v (is etcd running and reachable?)", ErrJoin, opts.Etcd.Endpoints, opts.Etcd.DialTimeout, err)
	}
	lctx, stop := context.WithCancel(context.Background())
	return &etcdProvider{cli: cli, prefix: opts.Etcd.Prefix, dialTimeout: opts.Etcd.DialTimeout,
		log: opts.Logger.With(slog.String("component", "cluster"), slog.String("provider", ProviderEtcd)),
		ctx: lctx, cancel: stop, expelled: make(chan string, 1), kick: make(chan struct{}, 1)}, nil
}

// StartMember registers this member, publishes the first member list and
// starts keeping the registration alive and following the others.
func (p *etcdProvider) StartMember(c *pcluster.Cluster) error {
	host, portText, err := net.SplitHostPort(c.ActorSystem.Address())
	if err != nil {
		return fmt.Errorf("etcd provider: the member's address %q: %w", c.ActorSystem.Address(), err)
	}
	port, _ := strconv.Atoi(portText)
	p.c = c
	p.dir = strings.Join([]string{p.prefix, c.Config.Name, ""}, "/")
	p.base = etcdNode{Host: host, Address: host, Port: port, Kinds: c.GetClusterKinds(), Alive: true}
	ctx, cancel := context.WithTimeout(p.ctx, p.dialTimeout)
	defer cancel()
	if err := p.register(ctx); err != nil {
		return fmt.Errorf("etcd provider: registering this member: %w", err)
	}
	p.sync(ctx)
	p.wg.Add(2)
	go p.keep()
	go p.follow()
	return nil
}

// StartClient is not supported: agentos joins members only.
func (p *etcdProvider) StartClient(*pcluster.Cluster) error {
	return fmt.Errorf("etcd provider: client-only members are not supported")
}

// register puts this member's key under a new lease, with a new id after
// the first registration.
func (p *etcdProvider) register(ctx context.Context) error {
	p.mu.Lock()
	p.n++
	node := p.base
	node.ID = p.c.Config.Name + "@" + p.c.ActorSystem.ID
	if p.n > 1 {
		node.ID += "#" + strconv.Itoa(p.n)
	}
	node.Name = node.ID
	p.mu.Unlock()
	data, err := json.Marshal(node)
	if err != nil {
		return err
	}
	g, err := p.cli.Grant(ctx, int64(etcdLeaseTTL/time.Second))
	if err != nil {
		return err
	}
	r, err := p.cli.Put(ctx, p.dir+node.ID, string(data), clientv3.WithLease(g.ID))
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.self, p.lease, p.putRev = node, g.ID, r.Header.Revision
	p.mu.Unlock()
	return nil
}

// keep keeps the registration's lease alive; when it lapses (or a read
// found the key gone) it registers again under a new id.
func (p *etcdProvider) keep() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		lease, id := p.lease, p.self.ID
		p.mu.Unlock()
		expelled := p.hold(lease, id)
		if p.ctx.Err() != nil {
			return
		}
		if !expelled && p.leaseAlive(lease) {
			continue // etcd came back with the lease: nobody saw the key go
		}
		why := "its lease expired (etcd did not answer, or this process was paused, for over " + etcdLeaseTTL.String() + ")"
		if expelled {
			why = "its key is gone from etcd"
		}
		p.log.Warn("this member was dropped from the cluster: "+why+"; the others block its id for good, so it rejoins under a new one",
			slog.String("id", id))
		p.revoke(lease)
		if !p.reregister() {
			return
		}
		p.mu.Lock()
		id = p.self.ID
		p.mu.Unlock()
		p.log.Warn("this member rejoined the cluster", slog.String("id", id))
		p.poke()
	}
}

// hold renews lease until its keep-alive ends, and reports whether it
// ended because a read found id's key gone.
func (p *etcdProvider) hold(lease clientv3.LeaseID, id string) (expelled bool) {
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	ch, err := p.cli.KeepAlive(ctx, lease)
	if err != nil {
		return false
	}
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return false
			}
		case gone := <-p.expelled:
			if gone == id { // not a stale report about an earlier id
				return true
			}
		}
	}
}

// leaseAlive asks etcd, until it answers, whether lease still lives.
func (p *etcdProvider) leaseAlive(lease clientv3.LeaseID) bool {
	for {
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(p.ctx, etcdResync)
		r, err := p.cli.TimeToLive(ctx, lease)
		cancel()
		if err == nil {
			return r.TTL > 0
		}
		if !p.sleep(etcdResync - time.Since(t0)) {
			return false
		}
	}
}

// reregister registers again until it succeeds (false: the provider stopped).
func (p *etcdProvider) reregister() bool {
	for {
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(p.ctx, etcdResync)
		err := p.register(ctx)
		cancel()
		if err == nil {
			return true
		}
		if !p.sleep(etcdResync - time.Since(t0)) {
			return false
		}
	}
}

// revoke ends lease at once (its key with it), if it still lives.
func (p *etcdProvider) revoke(lease clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(p.ctx, etcdResync)
	defer cancel()
	_, _ = p.cli.Revoke(ctx, lease)
}

// sleep waits d (at most: a retry paced to one a second sleeps what is
// left of the second); false if the provider stopped meanwhile.
func (p *etcdProvider) sleep(d time.Duration) bool {
	if d <= 0 {
		return p.ctx.Err() == nil
	}
	select {
	case <-p.ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// poke asks follow to read the member list now.
func (p *etcdProvider) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// follow reads the member list at every watch event, every etcdResync
// and every poke. A watch that ends is started again at the next tick.
func (p *etcdProvider) follow() {
	defer p.wg.Done()
	t := time.NewTicker(etcdResync)
	defer t.Stop()
	wctx := clientv3.WithRequireLeader(p.ctx)
	watch := func() clientv3.WatchChan { return p.cli.Watch(wctx, p.dir, clientv3.WithPrefix()) }
	wch := watch()
	for {
		select {
		case <-p.ctx.Done():
			return
		case r, ok := <-wch:
			if !ok || r.Err() != nil {
				wch = nil
				continue
			}
		case <-t.C:
			if wch == nil {
				wch = watch()
			}
		case <-p.kick:
		}
		ctx, cancel := context.WithTimeout(p.ctx, etcdResync)
		p.sync(ctx)
		cancel()
	}
}

// sync reads every member's key and publishes them, this member
// included, as protoactor's topology. While etcd does not answer, the
// last topology stays.
func (p *etcdProvider) sync(ctx context.Context) {
	r, err := p.cli.Get(ctx, p.dir, clientv3.WithPrefix())
	p.reachable(err)
	if err != nil {
		return
	}
	// Read after the Get: a registration whose put completed before the
	// read began is in r (r's revision is at least its putRev).
	p.mu.Lock()
	self, putRev := p.self, p.putRev
	p.mu.Unlock()
	members := []*pcluster.Member{}
	found := false
	for _, kv := range r.Kvs {
		var n etcdNode
		if err := json.Unmarshal(kv.Value, &n); err != nil || n.ID == "" {
			continue // not a member's registration
		}
		found = found || n.ID == self.ID
		members = append(members, memberOfNode(n))
	}
	if !found {
		members = append(members, memberOfNode(self))
		if r.Header.Revision >= putRev {
			select {
			case p.expelled <- self.ID:
			default:
			}
		}
	}
	p.publish(members)
}

func memberOfNode(n etcdNode) *pcluster.Member {
	host := n.Host
	if host == "" {
		host = n.Address
	}
	kinds := n.Kinds
	if kinds == nil {
		kinds = []string{}
	}
	return &pcluster.Member{Id: n.ID, Host: host, Port: int32(n.Port), Kinds: kinds}
}

// publish hands members to protoactor's member list when they differ from
// the last published, and logs the change.
func (p *etcdProvider) publish(members []*pcluster.Member) {
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.Id
	}
	slices.Sort(ids)
	p.mu.Lock()
	shown := p.shown
	p.shown = ids
	p.mu.Unlock()
	if slices.Equal(ids, shown) {
		return
	}
	if shown != nil {
		var joined, left []string
		for _, id := range ids {
			if !slices.Contains(shown, id) {
				joined = append(joined, id)
			}
		}
		for _, id := range shown {
			if !slices.Contains(ids, id) {
				left = append(left, id)
			}
		}
		p.log.Info("cluster members changed", slog.Int("members", len(ids)),
			slog.Any("joined", joined), slog.Any("left", left))
	}
	p.c.MemberList.UpdateClusterTopology(members)
}

// reachable logs etcd going away (err != nil) and coming back, once each.
func (p *etcdProvider) reachable(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err != nil && p.down.IsZero():
		p.down = time.Now()
		p.log.Warn("etcd does not answer: this member keeps its last member list and retries every "+etcdResync.String()+
			"; if this lasts over "+etcdLeaseTTL.String()+" its registration lapses and it rejoins under a new id when etcd is back",
			slog.Int("members", len(p.shown)), slog.Any("error", err))
	case err == nil && !p.down.IsZero():
		p.log.Warn("etcd answers again", slog.Duration("after", time.Since(p.down).Round(time.Millisecond)))
		p.down = time.Time{}
	}
}

// Shutdown stops following and renewing, then deletes this member's key
// and revokes its lease.
func (p *etcdProvider) Shutdown(graceful bool) error {
	p.stop()
	p.mu.Lock()
	id, lease := p.self.ID, p.lease
	p.mu.Unlock()
	if id == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.dialTimeout)
	defer cancel()
	if _, err := p.cli.Delete(ctx, p.dir+id); err != nil {
		return fmt.Errorf("etcd provider: deleting %s%s: %w", p.dir, id, err)
	}
	_, _ = p.cli.Revoke(ctx, lease)
	return nil
}

func (p *etcdProvider) stop() {
	p.stopOnce.Do(func() {
		p.cancel()
		p.wg.Wait()
	})
}

// close stops the provider and closes its etcd client.
func (p *etcdProvider) close() {
	p.stop()
	_ = p.cli.Close()
}
