package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/agentos-run/agentos/internal/etcdtest"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// testCA makes a CA in a new directory and one member certificate per
// name, and returns each member's TLS.
func testCA(t testing.TB, names ...string) map[string]TLS {
	t.Helper()
	dir := t.TempDir()
	if _, err := MakeCA(dir, "test", time.Hour); err != nil {
		t.Fatal(err)
	}
	out := map[string]TLS{}
	for _, n := range names {
		cert, key, err := MakeMemberCert(dir, n, []string{"127.0.0.1"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = TLS{CertFile: cert, KeyFile: key, CAFile: filepath.Join(dir, CACertFile)}
	}
	return out
}

// A node whose certificate another CA signed, listed in the victims' seeds
// (and listing them), is never a member for them: not in their Status, not
// in protoactor's member list, and no grain is placed on it.
func TestStrangerNotAdmitted(t *testing.T) {
	ours := testCA(t, "a", "b")
	theirs := testCA(t, "stranger")
	lns, seeds := reserve(t, 3)
	cs, strangers := newCounters(), newCounters()
	tlss := []TLS{ours["a"], ours["b"], theirs["stranger"]}
	opts := make([]Options, 3)
	for i := range opts {
		k := cs.kind("counter")
		if i == 2 {
			k = strangers.kind("counter")
		}
		opts[i] = Options{Name: t.Name(), Seeds: seeds, HealthListener: lns[i], Kinds: []Kind{k},
			RefreshInterval: 200 * time.Millisecond, Logger: quiet(t), TLS: tlss[i]}
	}
	ms := joinAll(t, opts)
	waitAll(t, ms[:2], 2)
	time.Sleep(1500 * time.Millisecond) // several polls of the stranger's endpoint
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 30 {
		id := "id" + string(rune('a'+i%26)) + string(rune('0'+i/26))
		res, err := ms[i%2].Request(ctx, "counter", id, wrapperspb.String("x"))
		if err != nil {
			t.Fatalf("request %s: %v", id, err)
		}
		if addr := strings.Split(res.(*wrapperspb.StringValue).Value, "|")[0]; addr == ms[2].Address() {
			t.Fatalf("grain %s was placed on the stranger %s", id, addr)
		}
	}
	for _, m := range ms[:2] {
		for _, mi := range m.Status().Members {
			if mi.Address == ms[2].Address() {
				t.Errorf("%s lists the stranger: %+v", m.Address(), mi)
			}
		}
		if n := m.Cluster().MemberList.Length(); n != 2 {
			t.Errorf("%s: protoactor's member list holds %d members, want 2", m.Address(), n)
		}
	}
	if alive := ms[2].Status().Alive(); len(alive) != 1 {
		t.Errorf("the stranger sees %d members, want itself only: %+v", len(alive), alive)
	}
	strangers.mu.Lock()
	defer strangers.mu.Unlock()
	if len(strangers.activations) != 0 {
		t.Errorf("the stranger activated %d grains", len(strangers.activations))
	}
}

// The same through etcd, whose registrations anyone reaching etcd over
// http:// may write: a member registered there with another CA's
// certificate fails the admission handshake, is never in the members'
// Status, protoactor's member list drops it, and no grain reaches it.
func TestStrangerNotAdmittedThroughEtcd(t *testing.T) {
	ep := etcdtest.Start(t)
	ours := testCA(t, "a", "b")
	theirs := testCA(t, "stranger")
	cs, strangers := newCounters(), newCounters()
	tlss := []TLS{ours["a"], ours["b"], theirs["stranger"]}
	opts := make([]Options, 3)
	for i := range opts {
		k := cs.kind("counter")
		if i == 2 {
			k = strangers.kind("counter")
		}
		opts[i] = Options{Name: t.Name(), Provider: ProviderEtcd, Etcd: EtcdOptions{Endpoints: []string{ep}, Prefix: "/" + t.Name()},
			Kinds: []Kind{k}, Logger: quiet(t), TLS: tlss[i]}
	}
	ms := joinAll(t, opts)
	waitAll(t, ms[:2], 2)
	for _, m := range ms[:2] {
		eventually(t, m.Address()+": protoactor's member list drops the stranger", func() bool {
			return m.Cluster().MemberList.Length() == 2
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 20 {
		id := "id" + string(rune('a'+i))
		res, err := ms[i%2].Request(ctx, "counter", id, wrapperspb.String("x"))
		if err != nil {
			t.Fatalf("request %s: %v", id, err)
		}
		if addr := strings.Split(res.(*wrapperspb.StringValue).Value, "|")[0]; addr == ms[2].Address() {
			t.Fatalf("grain %s answered from the stranger", id)
		}
	}
	for _, m := range ms[:2] {
		for _, mi := range m.Status().Members {
			if mi.Address == ms[2].Address() {
				t.Errorf("%s lists the stranger: %+v", m.Address(), mi)
			}
		}
	}
	strangers.mu.Lock()
	defer strangers.mu.Unlock()
	if len(strangers.activations) != 0 {
		t.Errorf("the stranger activated %d grains", len(strangers.activations))
	}
}

// A protoactor peer that is no member (plaintext, or TLS with another
// CA's certificate) cannot deliver a message to a TLS member's actor; a
// member with the CA's certificate can (the control).
func TestNonMemberCannotDeliver(t *testing.T) {
	ours := testCA(t, "target", "friend")
	theirs := testCA(t, "stranger")
	join := func(o Options) *Member {
		o.Name, o.Logger = t.Name(), quiet(t)
		return joinAll(t, []Options{o})[0]
	}
	target := join(Options{TLS: ours["target"]})
	var got atomic.Int64
	if _, err := target.SystemWrapper().SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*wrapperspb.StringValue); ok {
			got.Add(1)
		}
	}), "sink"); err != nil {
		t.Fatal(err)
	}
	// A fresh PID per sender: a PID caches the process it resolved to
	// (the sender's remote).
	sink := func() *actor.PID { return actor.NewPID(target.Address(), "sink") }
	for _, peer := range []struct {
		name string
		opts Options
	}{
		{"plaintext peer", Options{InsecureLoopback: true}},
		{"peer with another CA's certificate", Options{TLS: theirs["stranger"]}},
	} {
		m := join(peer.opts)
		for range 5 {
			m.System().Root.Send(sink(), wrapperspb.String(peer.name))
		}
		time.Sleep(1500 * time.Millisecond)
		if n := got.Load(); n != 0 {
			t.Fatalf("a %s delivered %d messages to a TLS member", peer.name, n)
		}
	}
	friend := join(Options{TLS: ours["friend"]})
	friend.System().Root.Send(sink(), wrapperspb.String("member"))
	eventually(t, "a member's message delivered", func() bool { return got.Load() == 1 })
}

// Plaintext is refused at Join unless the caller said so and every
// address is a loopback one; bad certificate files are refused too.
func TestPlaintextAndTLSOptionsRefused(t *testing.T) {
	ours := testCA(t, "a")
	other := testCA(t, "b")
	bad := filepath.Join(t.TempDir(), "bad.pem")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"no TLS, not said", Options{}, "InsecureLoopback"},
		{"bind on every interface", Options{InsecureLoopback: true, Host: "0.0.0.0"}, `"0.0.0.0" is not a loopback`},
		{"advertised address", Options{InsecureLoopback: true, AdvertisedAddress: "10.0.0.5:7000"}, `"10.0.0.5"`},
		{"seed", Options{InsecureLoopback: true, Seeds: []string{"127.0.0.1:6330", "node2.example:6330"}}, `"node2.example"`},
		{"etcd endpoint", Options{InsecureLoopback: true, Provider: ProviderEtcd, Etcd: EtcdOptions{Endpoints: []string{"http://10.1.2.3:2379"}}}, `"10.1.2.3"`},
		{"key missing", Options{TLS: TLS{CertFile: ours["a"].CertFile, CAFile: ours["a"].CAFile}}, "needs the member's certificate, its key"},
		{"CA not PEM", Options{TLS: TLS{CertFile: ours["a"].CertFile, KeyFile: ours["a"].KeyFile, CAFile: bad}}, "holds no PEM certificate"},
		{"certificate of another CA", Options{TLS: TLS{CertFile: ours["a"].CertFile, KeyFile: ours["a"].KeyFile, CAFile: other["b"].CAFile}}, "does not verify against the CA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Logger = quiet(t)
			m, err := Join(context.Background(), tc.opts)
			if err == nil {
				_ = m.Leave(context.Background())
				t.Fatal("joined")
			}
			if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrOptions saying %q", err, tc.want)
			}
		})
	}
}

// MakeCA keeps an existing CA; member keys are owner-only; a member
// certificate is never overwritten.
func TestMakeCerts(t *testing.T) {
	dir := t.TempDir()
	if made, err := MakeCA(dir, "c", time.Hour); err != nil || !made {
		t.Fatalf("MakeCA: %v %v", made, err)
	}
	ca, _ := os.ReadFile(filepath.Join(dir, CACertFile))
	if made, err := MakeCA(dir, "c", time.Hour); err != nil || made {
		t.Fatalf("second MakeCA: made %v, %v", made, err)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, CACertFile)); string(again) != string(ca) {
		t.Fatal("the CA was replaced")
	}
	_, key, err := MakeMemberCert(dir, "n1", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{key, filepath.Join(dir, CAKeyFile)} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", p, fi.Mode().Perm(), err)
		}
	}
	if _, _, err := MakeMemberCert(dir, "n1", nil, time.Hour); err == nil || !strings.Contains(err.Error(), "never overwritten") {
		t.Errorf("second n1: %v", err)
	}
	if _, _, err := MakeMemberCert(dir, "../x", nil, time.Hour); err == nil {
		t.Error("a name with a path was accepted")
	}
	if _, _, err := MakeMemberCert(t.TempDir(), "n2", nil, time.Hour); err == nil || !strings.Contains(err.Error(), "make it first") {
		t.Errorf("no CA: %v", err)
	}
}
