package cluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"
)

// seedsHTTPTimeout bounds one poll of a seed's health endpoint.
const seedsHTTPTimeout = 2 * time.Second

// seedsNode is a member's answer at GET /_health: the JSON of protoactor's
// automanaged provider (members of either version read each other), and
// Members, the ids the answering member lists as alive (this provider's
// own; absent from automanaged's answers).
type seedsNode struct {
	ID             string   `json:"id"`
	Address        string   `json:"address"`
	AutoManagePort int      `json:"auto_manage_port"`
	Port           int      `json:"port"`
	Kinds          []string `json:"kinds"`
	ClusterName    string   `json:"cluster_name"`
	Members        []string `json:"members,omitempty"`
}

// seedsProvider is the seed-list membership provider. It replaces
// protoactor's automanaged provider, which binds its health endpoint on
// 0.0.0.0 and never heals: protoactor's member list blocks the id of a
// member it saw leave, for good, so a member paused (SIGSTOP, a long GC)
// or cut off past a poll, dropped by the others, is never listed again when
// it comes back under the same id, and drops them likewise when its polls
// in flight during the pause time out.
//
// Here every member serves GET /_health on a listener of ours and polls
// every seed's endpoint each RefreshInterval (seedsHTTPTimeout each); the
// topology published to protoactor is exactly the members of this cluster
// that answered, plus this member. Healing:
//   - a poll round that took far longer than it can (this process was
//     paused) is discarded: a pause does not drop the members that did not
//     answer meanwhile;
//   - every answer names the ids its member lists as alive; a member that
//     answers but has not named this member's id for healGrace (it blocked
//     it) makes this member register under a new id
//     ("<cluster>@<system id>#<n>"), which nobody blocked, and say so in
//     its log.
type seedsProvider struct {
	srv    *http.Server
	ln     net.Listener
	addr   string // host:port of the health endpoint
	port   int
	hosts  []string // every seed, this member's endpoint included
	client *http.Client
	every  time.Duration
	grace  time.Duration
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once

	mu      sync.Mutex
	c       *pcluster.Cluster
	n       int       // registrations made (the id's incarnation)
	self    seedsNode // this member as it answers
	listed  []string  // ids of the members published last, sorted
	missing map[string]time.Time
	// missing: endpoint -> since when it answers without naming self.ID
}

func newSeedsProvider(opts Options, tc *tlsConfigs) (*seedsProvider, error) {
	ln := opts.HealthListener
	if ln == nil {
		var err error
		ln, err = net.Listen("tcp", net.JoinHostPort(opts.Host, strconv.Itoa(opts.HealthPort)))
		if err != nil {
			return nil, fmt.Errorf("%w: the health endpoint cannot listen on %s:%d: %v (pick a free HealthPort, or 0)", ErrJoin, opts.Host, opts.HealthPort, err)
		}
	}
	addr := ln.Addr().String()
	_, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)
	if tc != nil {
		ln = tls.NewListener(ln, tc.server) // the health endpoint admits members only
	}
	hosts := append([]string(nil), opts.Seeds...)
	if !slices.Contains(hosts, addr) {
		hosts = append(hosts, addr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &seedsProvider{ln: ln, addr: addr, port: port, hosts: hosts, every: opts.RefreshInterval,
		grace: 2 * (opts.RefreshInterval + seedsHTTPTimeout),
		log:   opts.Logger.With(slog.String("component", "cluster"), slog.String("provider", ProviderSeeds)),
		ctx:   ctx, cancel: cancel, missing: map[string]time.Time{}}
	p.client = &http.Client{Timeout: seedsHTTPTimeout, Transport: p.transport(tc)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_health", p.onHealth)
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: seedsHTTPTimeout,
		ErrorLog: stdlog.New(io.Discard, "", 0)} // refused handshakes: the polling side logs them once
	return p, nil
}

// transport dials the seeds: over mutual TLS when tc is set (a seed that
// is no member, without a certificate from the cluster's CA, fails its
// poll and is never listed; logged once per seed).
func (p *seedsProvider) transport(tc *tlsConfigs) *http.Transport {
	t := &http.Transport{MaxIdleConns: 10, IdleConnTimeout: 90 * time.Second, MaxConnsPerHost: 10}
	if tc == nil {
		t.DialContext = (&net.Dialer{Timeout: seedsHTTPTimeout}).DialContext
		return t
	}
	var refused sync.Map // seed address -> struct{}: logged once
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := tc.dialTLS(ctx, network, addr)
		if err != nil && isTLSRefusal(err) {
			if _, seen := refused.LoadOrStore(addr, struct{}{}); !seen {
				p.log.Warn("a seed was refused: it did not prove it is a member of this cluster (TLS handshake failed); it is not listed and no work is placed on it. "+
					"If it should be a member, give it a certificate signed by this cluster's CA ('agentos cluster certs --dir DIR --node NAME' with the same DIR) and the same ca.crt",
					slog.String("seed", addr), slog.Any("error", err))
			}
		}
		return conn, err
	}
	return t
}

// onHealth answers this member (503 before it started).
func (p *seedsProvider) onHealth(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	self, c := p.self, p.c
	p.mu.Unlock()
	if c == nil || self.ID == "" {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	self.Members = p.alive(c)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(self)
}

// alive are the ids this member lists as alive: those it published last
// that protoactor did not block.
func (p *seedsProvider) alive(c *pcluster.Cluster) []string {
	p.mu.Lock()
	listed := p.listed
	p.mu.Unlock()
	out := make([]string, 0, len(listed))
	for _, id := range listed {
		if !c.Remote.BlockList().IsBlocked(id) {
			out = append(out, id)
		}
	}
	return out
}

// StartMember serves the health endpoint, publishes the first member list
// (a first poll) and starts polling.
func (p *seedsProvider) StartMember(c *pcluster.Cluster) error {
	host, port, err := c.ActorSystem.GetHostPort()
	if err != nil {
		return fmt.Errorf("seeds provider: the member's address: %w", err)
	}
	p.mu.Lock()
	p.c = c
	p.self = seedsNode{Address: host, Port: port, AutoManagePort: p.port, Kinds: c.GetClusterKinds(), ClusterName: c.Config.Name}
	p.mu.Unlock()
	p.register()
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		if err := p.srv.Serve(p.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Error("the health endpoint stopped: the other members will drop this one", slog.Any("error", err))
		}
	}()
	p.poll()
	go p.follow()
	return nil
}

// StartClient is not supported: agentos joins members only.
func (p *seedsProvider) StartClient(*pcluster.Cluster) error {
	return fmt.Errorf("seeds provider: client-only members are not supported")
}

// register gives this member its next id: the system's id first, then
// "#2", "#3"...
func (p *seedsProvider) register() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	p.self.ID = p.c.Config.Name + "@" + p.c.ActorSystem.ID
	if p.n > 1 {
		p.self.ID += "#" + strconv.Itoa(p.n)
	}
	clear(p.missing)
}

// follow polls every RefreshInterval until the provider stops.
func (p *seedsProvider) follow() {
	defer p.wg.Done()
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
			p.poll()
		}
	}
}

// poll asks every seed at once and publishes the members that answered.
func (p *seedsProvider) poll() {
	t0 := time.Now()
	answers := make([]*seedsNode, len(p.hosts))
	var wg sync.WaitGroup
	for i, h := range p.hosts {
		wg.Go(func() { answers[i] = p.ask(h) })
	}
	wg.Wait()
	if took := time.Since(t0); took > seedsHTTPTimeout+time.Second {
		// A round bounded by the HTTP timeout lasted longer: this process
		// was paused (or starved) meanwhile. What did not answer says
		// nothing about the others: keep the last list.
		p.log.Warn("this member was paused: its polls of the seeds took "+took.Round(time.Millisecond).String()+
			"; the members may have dropped it, it checks whether they list it again", slog.Duration("poll", took))
		return
	}
	p.mu.Lock()
	self := p.self
	p.mu.Unlock()
	members := []*pcluster.Member{}
	hasSelf := false
	for i, n := range answers {
		if n == nil || n.ClusterName != self.ClusterName || n.ID == "" {
			continue
		}
		if n.ID == self.ID || (p.hosts[i] == p.addr) {
			n = &self
			hasSelf = true
		}
		members = append(members, memberOfSeed(n))
		p.check(p.hosts[i], n, self.ID)
	}
	if !hasSelf {
		members = append(members, memberOfSeed(&self))
	}
	p.publish(members)
	p.rejoinIfDropped()
}

// ask returns a seed's answer (nil: it did not answer as a member).
func (p *seedsProvider) ask(host string) *seedsNode {
	ctx, cancel := context.WithTimeout(p.ctx, seedsHTTPTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/_health", nil)
	if err != nil {
		return nil
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	var n seedsNode
	if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&n) != nil {
		return nil
	}
	return &n
}

// check notes whether the member at host, which answered n, lists this
// member's id (a member of an older version names none: not checked).
func (p *seedsProvider) check(host string, n *seedsNode, selfID string) {
	if host == p.addr || n.ID == selfID || n.Members == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.Contains(n.Members, selfID) {
		delete(p.missing, host)
	} else if _, ok := p.missing[host]; !ok {
		p.missing[host] = time.Now()
	}
}

// rejoinIfDropped registers this member under a new id when a member that
// answers has not listed it for healGrace: it saw this member leave and
// blocks its id for good.
func (p *seedsProvider) rejoinIfDropped() {
	p.mu.Lock()
	var by string
	for host, since := range p.missing {
		if time.Since(since) > p.grace {
			by = host
			break
		}
	}
	old := p.self.ID
	p.mu.Unlock()
	if by == "" {
		return
	}
	p.register()
	p.mu.Lock()
	id := p.self.ID
	p.mu.Unlock()
	p.log.Warn("this member was dropped from the cluster (paused, or cut off, past a poll): the member at "+by+
		" no longer lists it and blocks its id for good, so it rejoins under a new one",
		slog.String("id", old), slog.String("new_id", id))
}

func memberOfSeed(n *seedsNode) *pcluster.Member {
	kinds := n.Kinds
	if kinds == nil {
		kinds = []string{}
	}
	return &pcluster.Member{Id: n.ID, Host: n.Address, Port: int32(n.Port), Kinds: kinds}
}

// publish hands members to protoactor's member list when they differ from
// the last published, and logs the change.
func (p *seedsProvider) publish(members []*pcluster.Member) {
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.Id
	}
	slices.Sort(ids)
	p.mu.Lock()
	shown := p.listed
	p.listed = ids
	c := p.c
	p.mu.Unlock()
	if slices.Equal(ids, shown) {
		return
	}
	if shown != nil {
		p.log.Info("cluster members changed", slog.Int("members", len(ids)),
			slog.Any("joined", without(ids, shown)), slog.Any("left", without(shown, ids)))
	}
	c.MemberList.UpdateClusterTopology(members)
}

// without returns the ids of a that b lacks.
func without(a, b []string) []string {
	var out []string
	for _, id := range a {
		if !slices.Contains(b, id) {
			out = append(out, id)
		}
	}
	return out
}

// Shutdown stops polling and serving.
func (p *seedsProvider) Shutdown(bool) error {
	p.close()
	return nil
}

// close stops the provider and closes its health endpoint (Shutdown does
// too; a member that failed to start was never shut down).
func (p *seedsProvider) close() {
	p.once.Do(func() {
		p.cancel()
		_ = p.srv.Close()
		_ = p.ln.Close()
		p.wg.Wait()
		p.client.CloseIdleConnections()
	})
}
