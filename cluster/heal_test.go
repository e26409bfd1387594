package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/agentos-run/agentos/internal/etcdtest"
	"github.com/agentos-run/agentos/internal/loopport"
)

// whereKind is the grain kind of the healing tests: it answers
// "<member address>|<identity>|<n>" (counters.kind).
const whereKind = "where"

// healBound is the convergence bound docs/CLUSTER.md states: after etcd
// is back, or a paused member resumes, every member sees every member
// within it.
const healBound = 8 * time.Second

// printViews (child role "heal") prints "VIEW <alive addresses, sorted,
// comma-separated>" whenever the member's view changes.
func printViews(m *Member) {
	last := ""
	for {
		v := strings.Join(aliveAddrs(m.Status()), ",")
		if v != last {
			fmt.Printf("VIEW %s\n", v)
			last = v
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// aliveAddrs returns the addresses of s's alive members, sorted, one
// entry per member (an address listed twice is two members).
func aliveAddrs(s Status) []string {
	var out []string
	for _, info := range s.Alive() {
		out = append(out, info.Address)
	}
	slices.Sort(out)
	return out
}

func (c *child) lastView() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.view
}

// healCluster is two in-process members and a child process hosting
// whereKind, on the etcd at ep.
func healCluster(t *testing.T, ep string) ([]*Member, *child, []string) {
	t.Helper()
	ms := startEtcd(t, ep, 2, newCounters().kind(whereKind))
	c := startChild(t, "heal", nil, nil, childEtcd+"="+ep, childName+"="+ms[0].opts.Name)
	want := []string{ms[0].Address(), ms[1].Address(), c.addr}
	slices.Sort(want)
	if d := converge(ms, c, want, 20*time.Second); d < 0 {
		t.Fatalf("the cluster did not form: %s", views(ms, c))
	}
	return ms, c, want
}

// settled is how long the views must hold to count as converged: longer
// than a lease, so that registrations expiring late are seen.
const settled = etcdLeaseTTL + 2*time.Second

// converge waits until every member, the child included, sees exactly
// want alive and keeps seeing it for settled, and returns how long after
// the call the views became right for good (-1: not within limit).
func converge(ms []*Member, c *child, want []string, limit time.Duration) time.Duration {
	t0 := time.Now()
	w := strings.Join(want, ",")
	var since time.Time // the views are right since
	for time.Since(t0) < limit+settled {
		ok := c.lastView() == w
		for _, m := range ms {
			ok = ok && strings.Join(aliveAddrs(m.Status()), ",") == w
		}
		switch {
		case !ok:
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= settled:
			return since.Sub(t0)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return -1
}

func views(ms []*Member, c *child) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "\n  %s sees %v", m.Address(), aliveAddrs(m.Status()))
	}
	fmt.Fprintf(&b, "\n  child %s sees [%s]", c.addr, c.lastView())
	return b.String()
}

// placedEverywhere checks that grain requests from every in-process
// member are answered, and by every member of want (30 identities spread
// over three members by rendezvous hashing).
func placedEverywhere(t *testing.T, ms []*Member, want []string) {
	t.Helper()
	for _, m := range ms {
		seen := map[string]bool{}
		for i := 0; i < 30; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			res, err := m.Request(ctx, whereKind, fmt.Sprint("id-", i), wrapperspb.String("where?"))
			cancel()
			if err != nil {
				t.Fatalf("%s: request id-%d: %v", m.Address(), i, err)
			}
			seen[strings.SplitN(res.(*wrapperspb.StringValue).Value, "|", 2)[0]] = true
		}
		for _, a := range want {
			if !seen[a] {
				t.Errorf("%s: no grain placed on %s (answered by %v)", m.Address(), a, seen)
			}
		}
	}
}

// outage is how long etcd (TestEtcdOutageHeals) or a member
// (TestPausedMemberRejoins) is paused: past the lease by default,
// $AGENTOS_HEAL_OUTAGE (e.g. 30s) for a longer run.
func outage(t *testing.T) time.Duration {
	v := os.Getenv("AGENTOS_HEAL_OUTAGE")
	if v == "" {
		return 2*etcdLeaseTTL + time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < etcdLeaseTTL {
		t.Fatalf("AGENTOS_HEAL_OUTAGE=%q: want a duration of at least the lease, %v (e.g. 30s)", v, etcdLeaseTTL)
	}
	return d
}

// TestEtcdOutageHeals: etcd is down past the members' lease and comes
// back; every member sees every member again within healBound, without a
// restart, and grains placed across the members answer. etcd is paused
// (its leases expire meanwhile: what every member sees when etcd is cut
// off from all of them); AGENTOS_HEAL_ETCD=restart kills and restarts it
// instead (its leases survive a restart).
func TestEtcdOutageHeals(t *testing.T) {
	srv := etcdtest.New(t)
	ms, c, want := healCluster(t, srv.URL)
	if os.Getenv("AGENTOS_HEAL_ETCD") == "restart" {
		srv.Stop()
		time.Sleep(outage(t))
		srv.Restart(t)
	} else {
		srv.Pause(t)
		time.Sleep(outage(t))
		srv.Resume(t)
	}
	d := converge(ms, c, want, 2*healBound)
	if d < 0 || d > healBound {
		t.Fatalf("after etcd came back, not converged within %v (took %v):%s\nchild log:\n%s", healBound, d, views(ms, c), c.errText())
	}
	t.Logf("converged %v after etcd came back", d.Round(time.Millisecond))
	placedEverywhere(t, ms, want)
}

// TestPausedMemberRejoins: a member paused (SIGSTOP) past its lease is
// dropped by the others; resumed (SIGCONT), it says so in its log,
// rejoins under a new id and is listed by all within healBound.
func TestPausedMemberRejoins(t *testing.T) {
	ep := etcdtest.Start(t)
	ms, c, want := healCluster(t, ep)
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	stopped := true
	defer func() {
		if stopped {
			_ = c.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	for _, m := range ms {
		eventually(t, m.Address()+" drops the paused member", func() bool { return len(m.Status().Alive()) == 2 })
	}
	time.Sleep(max(time.Second, outage(t)-time.Since(paused)))
	if err := c.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	d := converge(ms, c, want, 2*healBound)
	if d < 0 || d > healBound {
		t.Fatalf("after SIGCONT, not converged within %v (took %v):%s\nchild log:\n%s", healBound, d, views(ms, c), c.errText())
	}
	t.Logf("converged %v after SIGCONT", d.Round(time.Millisecond))
	if log := c.errText(); !strings.Contains(log, "rejoin") {
		t.Errorf("the resumed member logged no rejoin line:\n%s", log)
	}
	placedEverywhere(t, ms, want)
}

// cutter is a TCP proxy to etcd that a test can cut (every connection
// closed, nothing listening) and restore on the same address: a member
// partitioned from etcd while the others reach it.
type cutter struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func newCutter(t *testing.T, target string) *cutter {
	t.Helper()
	c := &cutter{target: target}
	// Below port 0's range: while cut, no other listener or outgoing
	// connection is given the port that restore binds again.
	ports, err := loopport.Reserve(1)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0]))
	if err != nil {
		t.Fatal(err)
	}
	c.addr = ln.Addr().String()
	c.serve(ln)
	t.Cleanup(c.cut)
	return c
}

func (c *cutter) serve(ln net.Listener) {
	c.mu.Lock()
	c.ln = ln
	c.mu.Unlock()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", c.target)
			if err != nil {
				in.Close()
				continue
			}
			c.mu.Lock()
			c.conns = append(c.conns, in, out)
			c.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
}

// cut closes the listener and every proxied connection.
func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ln != nil {
		c.ln.Close()
		c.ln = nil
	}
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

// restore listens again on the same address.
func (c *cutter) restore(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		t.Fatalf("restoring the proxy on %s: %v", c.addr, err)
	}
	c.serve(ln)
}

// TestPartitionedMemberRejoins: a member cut off from etcd past its
// lease (the others still reach etcd) is dropped by the others; when it
// reaches etcd again it rejoins under a new id, says so, and is listed by
// all within healBound.
func TestPartitionedMemberRejoins(t *testing.T) {
	ep := etcdtest.Start(t)
	proxy := newCutter(t, strings.TrimPrefix(ep, "http://"))
	ms := startEtcd(t, ep, 2, newCounters().kind(whereKind))
	c := startChild(t, "heal", nil, nil, childEtcd+"=http://"+proxy.addr, childName+"="+ms[0].opts.Name)
	want := []string{ms[0].Address(), ms[1].Address(), c.addr}
	slices.Sort(want)
	if d := converge(ms, c, want, 20*time.Second); d < 0 {
		t.Fatalf("the cluster did not form: %s", views(ms, c))
	}
	proxy.cut()
	cutAt := time.Now()
	for _, m := range ms {
		eventually(t, m.Address()+" drops the partitioned member", func() bool { return len(m.Status().Alive()) == 2 })
	}
	time.Sleep(max(time.Second, outage(t)-time.Since(cutAt)))
	proxy.restore(t)
	d := converge(ms, c, want, 2*healBound)
	if d < 0 || d > healBound {
		t.Fatalf("after the partition ended, not converged within %v (took %v):%s\nchild log:\n%s", healBound, d, views(ms, c), c.errText())
	}
	t.Logf("converged %v after the partition ended", d.Round(time.Millisecond))
	if log := c.errText(); !strings.Contains(log, "rejoined") {
		t.Errorf("the partitioned member logged no rejoin line:\n%s", log)
	}
	placedEverywhere(t, ms, want)
}

// TestPausedSeedsMemberRejoins: with the seeds provider, a member paused
// (SIGSTOP) until the others dropped it is listed by all again within
// healBound of its SIGCONT, without a restart, says so in its log, and
// grains are placed on it again.
func TestPausedSeedsMemberRejoins(t *testing.T) {
	lns, all := reserve(t, 3)
	opts := make([]Options, 2)
	for i := range opts {
		opts[i] = Options{InsecureLoopback: true, Name: "seeds-heal", Seeds: all, HealthListener: lns[i],
			Kinds: []Kind{newCounters().kind(whereKind)}, RefreshInterval: 200 * time.Millisecond, Logger: quiet(t)}
	}
	ms := joinAll(t, opts)
	c := startChild(t, "heal", all, lns[2], childName+"=seeds-heal")
	want := []string{ms[0].Address(), ms[1].Address(), c.addr}
	slices.Sort(want)
	if d := converge(ms, c, want, 20*time.Second); d < 0 {
		t.Fatalf("the cluster did not form: %s", views(ms, c))
	}
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	stopped := true
	defer func() {
		if stopped {
			_ = c.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	for _, m := range ms {
		eventually(t, m.Address()+" drops the paused member", func() bool { return len(m.Status().Alive()) == 2 })
	}
	time.Sleep(max(time.Second, outage(t)-time.Since(paused)))
	if err := c.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	d := converge(ms, c, want, 2*healBound)
	if d < 0 || d > healBound {
		t.Fatalf("after SIGCONT, not converged within %v (took %v):%s\nchild log:\n%s", healBound, d, views(ms, c), c.errText())
	}
	t.Logf("converged %v after SIGCONT", d.Round(time.Millisecond))
	if log := c.errText(); !strings.Contains(log, "rejoin") {
		t.Errorf("the resumed member logged no rejoin line:\n%s", log)
	}
	placedEverywhere(t, ms, want)
}
