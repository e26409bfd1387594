package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/internal/etcdtest"
)

func TestSeedsMembersSeeEachOther(t *testing.T) {
	ms := startSeeds(t, 3)
	waitAll(t, ms, 3)
	checkSeeEachOther(t, ms)
}

func TestEtcdMembersSeeEachOther(t *testing.T) {
	ep := etcdtest.Start(t)
	ms := startEtcd(t, ep, 3)
	waitAll(t, ms, 3)
	checkSeeEachOther(t, ms)
}

func checkSeeEachOther(t *testing.T, ms []*Member) {
	t.Helper()
	want := map[string]bool{}
	for _, m := range ms {
		want[m.Address()] = true
	}
	for _, m := range ms {
		s := m.Status()
		if s.Self == "" || s.Address != m.Address() {
			t.Errorf("%s: Status self %q address %q", m.Address(), s.Self, s.Address)
		}
		got := map[string]bool{}
		for _, info := range s.Alive() {
			got[info.Address] = true
		}
		if len(got) != len(want) {
			t.Errorf("%s sees %v, want %v", m.Address(), got, want)
		}
		for a := range want {
			if !got[a] {
				t.Errorf("%s does not see %s", m.Address(), a)
			}
		}
	}
}

// providers runs f with members of each provider ("etcd" skips without
// etcd).
func providers(t *testing.T, f func(t *testing.T, start func(n int, kinds ...Kind) []*Member)) {
	t.Run("seeds", func(t *testing.T) {
		f(t, func(n int, kinds ...Kind) []*Member { return startSeeds(t, n, kinds...) })
	})
	t.Run("etcd", func(t *testing.T) {
		ep := etcdtest.Start(t)
		f(t, func(n int, kinds ...Kind) []*Member { return startEtcd(t, ep, n, kinds...) })
	})
}

func TestGrainActivatesOncePerIdentity(t *testing.T) {
	providers(t, testGrainActivatesOnce)
}

func testGrainActivatesOnce(t *testing.T, start func(n int, kinds ...Kind) []*Member) {
	cs := newCounters()
	ms := start(3, cs.kind("counter"))
	waitAll(t, ms, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ids = 12
	var wg sync.WaitGroup
	answers := make([][]string, ids)
	var mu sync.Mutex
	for id := 0; id < ids; id++ {
		for _, m := range ms {
			for rep := 0; rep < 2; rep++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := m.Request(ctx, "counter", idName(id), wrapperspb.String("hi"))
					if err != nil {
						t.Errorf("request %d from %s: %v", id, m.Address(), err)
						return
					}
					mu.Lock()
					answers[id] = append(answers[id], res.(*wrapperspb.StringValue).Value)
					mu.Unlock()
				}()
			}
		}
	}
	wg.Wait()
	held := map[string]string{}
	for _, m := range ms {
		for _, a := range m.Status().Activations {
			if a.Kind != "counter" {
				continue
			}
			if other, ok := held[a.Identity]; ok {
				t.Errorf("%s is held by %s and %s", a.Identity, other, m.Address())
			}
			held[a.Identity] = m.Address()
		}
	}
	owners := map[string]bool{}
	for id := 0; id < ids; id++ {
		if n := cs.count(idName(id)); n != 1 {
			t.Errorf("%s activated %d times, want 1", idName(id), n)
		}
		if held[idName(id)] == "" {
			t.Errorf("%s is held by no member's Status", idName(id))
		}
		owners[held[idName(id)]] = true
		seen := map[string]bool{}
		for _, a := range answers[id] {
			seen[a[len(a)-2:]] = true // the activation's message count: 6 distinct values from one activation
		}
		if len(answers[id]) != 2*len(ms) || len(seen) != 2*len(ms) {
			t.Errorf("%s answers %v: want %d from one activation", idName(id), answers[id], 2*len(ms))
		}
	}
	if len(owners) < 2 {
		t.Errorf("%d identities all placed on %v: the placement does not spread", ids, owners)
	}
}

func idName(i int) string { return "id-" + string(rune('a'+i)) }

func TestPubSubDeliversToEveryMember(t *testing.T) {
	providers(t, testPubSub)
}

func testPubSub(t *testing.T, start func(n int, kinds ...Kind) []*Member) {
	ms := start(3)
	waitAll(t, ms, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make([]chan string, len(ms))
	for i, m := range ms {
		got[i] = make(chan string, 16)
		unsub, err := m.Subscribe(ctx, "news", func(p proto.Message) { got[i] <- p.(*wrapperspb.StringValue).Value })
		if err != nil {
			t.Fatal(err)
		}
		defer unsub()
	}
	if err := ms[1].Publish(ctx, "news", wrapperspb.String("forged")); err != nil {
		t.Fatal(err)
	}
	for i := range ms {
		select {
		case v := <-got[i]:
			if v != "forged" {
				t.Errorf("member %d got %q", i, v)
			}
		case <-ctx.Done():
			t.Fatalf("member %d got nothing", i)
		}
	}
}

func TestLeftMemberRemovedFromStatus(t *testing.T) {
	ms := startSeeds(t, 3)
	waitAll(t, ms, 3)
	gone := ms[2].Address()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ms[2].Leave(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:2] {
		eventually(t, m.Address()+" sees "+gone+" gone", func() bool {
			for _, info := range m.Status().Members {
				if info.Address == gone {
					return !info.Alive
				}
			}
			return false
		})
		if n := len(m.Status().Alive()); n != 2 {
			t.Errorf("%s sees %d alive members, want 2", m.Address(), n)
		}
	}
	if err := ms[2].WaitMembers(ctx, 1); err != ErrLeft {
		t.Errorf("WaitMembers after Leave: %v, want ErrLeft", err)
	}
}

func TestJoinErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	for _, c := range []struct {
		name string
		opts Options
		want error
	}{
		{"unknown provider", Options{InsecureLoopback: true, Provider: "consul"}, ErrOptions},
		{"bad seed", Options{InsecureLoopback: true, Seeds: []string{"no-port"}}, ErrOptions},
		{"etcd without endpoints", Options{InsecureLoopback: true, Provider: ProviderEtcd}, ErrOptions},
		{"kind without props", Options{InsecureLoopback: true, Kinds: []Kind{{Name: "k"}}}, ErrOptions},
		{"remote port busy", Options{InsecureLoopback: true, Port: port, Logger: quiet(t)}, ErrJoin},
		{"health port busy", Options{InsecureLoopback: true, HealthPort: port, Logger: quiet(t)}, ErrJoin},
		{"etcd unreachable", Options{InsecureLoopback: true, Provider: ProviderEtcd, Logger: quiet(t),
			Etcd: EtcdOptions{Endpoints: []string{fmt.Sprintf("http://127.0.0.1:%d", port)}, DialTimeout: 300 * time.Millisecond}}, ErrJoin},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := Join(ctx, c.opts)
			if err == nil {
				_ = m.Leave(ctx)
				t.Fatal("joined")
			}
			if !errors.Is(err, c.want) {
				t.Errorf("error %v, want %v", err, c.want)
			}
		})
	}
}

func TestCallsAfterLeave(t *testing.T) {
	m := startSeeds(t, 1, newCounters().kind("counter"))[0]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := m.Request(ctx, "counter", "a", wrapperspb.String("x")); err != nil {
		t.Fatal(err)
	}
	if got := m.Status().Activations; len(got) != 1 || got[0] != (Activation{Kind: "counter", Identity: "a"}) {
		t.Errorf("activations %v", got)
	}
	if err := m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if got := m.Status().Activations; len(got) != 0 {
		t.Errorf("activations after Leave: %v (Leave stops the grains)", got)
	}
	if err := m.Leave(ctx); err != nil {
		t.Errorf("second Leave: %v", err)
	}
	if _, err := m.Request(ctx, "counter", "a", wrapperspb.String("x")); !errors.Is(err, ErrLeft) {
		t.Errorf("Request after Leave: %v", err)
	}
	if err := m.Publish(ctx, "t", wrapperspb.String("x")); !errors.Is(err, ErrLeft) {
		t.Errorf("Publish after Leave: %v", err)
	}
	if _, err := m.Subscribe(ctx, "t", func(proto.Message) {}); !errors.Is(err, ErrLeft) {
		t.Errorf("Subscribe after Leave: %v", err)
	}
	if _, err := m.Request(ctx, "nokind", "a", wrapperspb.String("x")); !errors.Is(err, ErrLeft) {
		t.Errorf("Request after Leave: %v", err)
	}
}

func TestRequestUnknownKindAndBadMessage(t *testing.T) {
	m := startSeeds(t, 1)[0]
	waitAll(t, []*Member{m}, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := m.Request(ctx, "nokind", "a", wrapperspb.String("x")); !errors.Is(err, ErrNoMember) {
		t.Errorf("unknown kind: %v, want ErrNoMember", err)
	}
	if _, err := m.Request(ctx, "nokind", "a", nil); !errors.Is(err, system.ErrNotProtobuf) {
		t.Errorf("nil message: %v, want system.ErrNotProtobuf", err)
	}
}

// An etcd member whose remote cannot start releases the provider (no
// hang, no leak).
func TestEtcdJoinFailsCleanly(t *testing.T) {
	ep := etcdtest.Start(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = Join(ctx, Options{InsecureLoopback: true, Provider: ProviderEtcd, Etcd: EtcdOptions{Endpoints: []string{ep}},
		Port: busy.Addr().(*net.TCPAddr).Port, Logger: quiet(t)})
	if !errors.Is(err, ErrJoin) {
		t.Fatalf("error %v, want ErrJoin", err)
	}
}
