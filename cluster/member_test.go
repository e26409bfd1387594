package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

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

func TestGrainActivatesOncePerIdentity(t *testing.T) {
	cs := newCounters()
	ms := startSeeds(t, 3, cs.kind("counter"))
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
	ms := startSeeds(t, 3)
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
