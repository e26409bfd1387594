package cluster

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"sync"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"
)

// admission keeps out of a TLS member's view every member that has not
// proved, by a TLS handshake with its remote, that it holds a certificate
// from the cluster's CA. The seeds provider's health endpoint already
// refuses such a seed; this covers a provider whose registrations anyone
// may write (etcd over http://): a stranger registered there is never in
// Status, never chosen by placement, and protoactor's member list drops
// it (it is put on protoactor's block list).
type admission struct {
	tc      *tlsConfigs
	log     *slog.Logger
	self    func() string   // this member's address: admitted without a handshake
	refused func(id string) // called once per member refused

	// applyMu orders the applications of topologies: the latest one seen
	// is re-applied when a handshake admits a member, never an older one
	// over a newer.
	applyMu sync.Mutex
	last    *pcluster.ClusterTopology

	life  context.Context // ends at close: the handshakes stop
	close context.CancelFunc
	wg    sync.WaitGroup // the handshakes under way

	mu      sync.Mutex
	verdict map[string]bool // member id -> admitted (true) or refused (false)
	pending map[string]bool // member id -> a handshake is under way
}

func newAdmission(tc *tlsConfigs, log *slog.Logger, self func() string, refused func(string)) *admission {
	a := &admission{tc: tc, log: log, self: self, refused: refused, verdict: map[string]bool{}, pending: map[string]bool{}}
	a.life, a.close = context.WithCancel(context.Background())
	return a
}

// stop ends the handshakes under way and waits for them (Leave).
func (a *admission) stop() {
	a.close()
	a.wg.Wait()
}

// apply calls view with t's members and left members that are admitted,
// and remembers t: it is applied again when a pending member is admitted.
func (a *admission) apply(t *pcluster.ClusterTopology, view func(members, left []*pcluster.Member)) {
	a.applyMu.Lock()
	defer a.applyMu.Unlock()
	a.last = t
	members := a.filter(t.Members, func(id string, ok bool) {
		if !ok {
			a.refused(id)
			return
		}
		a.applyMu.Lock()
		last := a.last
		a.applyMu.Unlock()
		a.apply(last, view)
	})
	a.mu.Lock()
	var left []*pcluster.Member
	for _, mem := range t.Left {
		if a.verdict[mem.Id] || mem.Address() == a.self() { // a member never admitted was never listed
			left = append(left, mem)
		}
	}
	a.mu.Unlock()
	view(members, left)
}

// blockStranger puts a refused member on protoactor's block list and has
// protoactor's member list drop it at once (its placement no longer picks
// it).
func (m *Member) blockStranger(id string) {
	if m.isLeft() {
		return
	}
	m.c.Remote.BlockList().Block(id)
	m.c.MemberList.UpdateClusterTopology(m.c.MemberList.Members().Members())
}

// admitTimeout bounds one admission handshake.
const admitTimeout = 3 * time.Second

// filter returns the members of ms admitted so far, and starts a
// handshake for each member not judged yet; decided is called (on another
// goroutine) once a handshake has judged one.
func (a *admission) filter(ms []*pcluster.Member, decided func(id string, ok bool)) []*pcluster.Member {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []*pcluster.Member
	for _, mem := range ms {
		ok, known := a.verdict[mem.Id]
		switch {
		case ok || mem.Address() == a.self():
			out = append(out, mem)
		case known || a.pending[mem.Id]:
		default:
			a.pending[mem.Id] = true
			a.wg.Add(1)
			go func() {
				defer a.wg.Done()
				a.check(mem.Id, mem.Address(), decided)
			}()
		}
	}
	return out
}

// check handshakes with the member at addr until a verdict: admitted, or
// its certificate refused (logged once). An address that does not answer
// (a remote still starting, a loaded machine) is tried again every
// admitRetry, up to admitAttempts times, then judged again at the next
// topology.
func (a *admission) check(id, addr string, decided func(string, bool)) {
	var err error
	for range admitAttempts {
		if err = a.handshake(addr); err == nil || isTLSRefusal(err) || a.life.Err() != nil {
			break
		}
		select {
		case <-a.life.Done():
		case <-time.After(admitRetry):
		}
	}
	a.mu.Lock()
	delete(a.pending, id)
	refused := err != nil && isTLSRefusal(err)
	if err == nil || refused {
		a.verdict[id] = err == nil
	}
	a.mu.Unlock()
	switch {
	case a.life.Err() != nil:
	case err == nil:
		decided(id, true)
	case refused:
		a.log.Warn("cluster: a member registered with the provider was refused: it did not prove it is a member of this cluster (TLS handshake failed); it is not listed and no work is placed on it. "+
			"If it should be a member, give it a certificate signed by this cluster's CA ('agentos cluster certs --dir DIR --node NAME' with the same DIR)",
			slog.String("member", id), slog.String("address", addr), slog.Any("error", err))
		decided(id, false)
	default:
		a.log.Warn("cluster: a member's remote did not answer the admission handshake: not listed until it does (judged again at the next topology change)",
			slog.String("member", id), slog.String("address", addr), slog.Any("error", err))
	}
}

// The admission handshake's retries.
const (
	admitAttempts = 20
	admitRetry    = 500 * time.Millisecond
)

// handshake dials addr and completes a TLS handshake as a member.
func (a *admission) handshake(addr string) error {
	ctx, cancel := context.WithTimeout(a.life, admitTimeout)
	defer cancel()
	cfg := a.tc.client.Clone()
	cfg.NextProtos = []string{"h2"} // gRPC's server expects HTTP/2's ALPN
	conn, err := (&tls.Dialer{NetDialer: &net.Dialer{}, Config: cfg}).DialContext(ctx, "tcp", addr)
	if err == nil {
		_ = conn.Close()
	}
	return err
}
