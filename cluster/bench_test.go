package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/agentos-run/agentos/internal/etcdtest"
)

// BenchmarkJoin measures Join (one member, alone): protoactor's
// StartMember sleeps 1 s, so this is about 1 s.
func BenchmarkJoin(b *testing.B) {
	for b.Loop() {
		ms := startSeeds(b, 1)
		b.StopTimer()
		leaveAll(b, ms)
		b.StartTimer()
	}
}

// BenchmarkConvergence3 measures the time from starting 3 members
// (concurrently) until every one sees the 3 (seeds provider, 200 ms
// refresh).
func BenchmarkConvergence3(b *testing.B) {
	for b.Loop() {
		ms := startSeeds(b, 3)
		waitAll(b, ms, 3)
		b.StopTimer()
		leaveAll(b, ms)
		b.StartTimer()
	}
}

// BenchmarkConvergence3Etcd is BenchmarkConvergence3 with etcd.
func BenchmarkConvergence3Etcd(b *testing.B) {
	ep := etcdtest.Start(b)
	for b.Loop() {
		ms := startEtcd(b, ep, 3)
		waitAll(b, ms, 3)
		b.StopTimer()
		leaveAll(b, ms)
		b.StartTimer()
	}
}

// BenchmarkRequest measures a grain request round trip from a member to a
// grain it holds itself (local) and to a grain on the other member
// (remote, gRPC on loopback), in plaintext and over mutual TLS.
func BenchmarkRequest(b *testing.B) {
	for _, mode := range []string{"plaintext", "tls"} {
		b.Run(mode, func(b *testing.B) {
			cs := newCounters()
			var ms []*Member
			if mode == "plaintext" {
				ms = startSeeds(b, 2, cs.kind("counter"))
			} else {
				certs := testCA(b, "a", "b")
				lns, seeds := reserve(b, 2)
				ms = joinAll(b, []Options{
					{Name: b.Name(), Seeds: seeds, HealthListener: lns[0], Kinds: []Kind{cs.kind("counter")}, Logger: quiet(b), TLS: certs["a"]},
					{Name: b.Name(), Seeds: seeds, HealthListener: lns[1], Kinds: []Kind{cs.kind("counter")}, Logger: quiet(b), TLS: certs["b"]},
				})
			}
			benchRequest(b, ms)
		})
	}
}

func benchRequest(b *testing.B, ms []*Member) {
	waitAll(b, ms, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	placed := map[string]string{} // member address -> an identity it holds
	for i := 0; i < 100 && len(placed) < 2; i++ {
		id := fmt.Sprint("bench-", i)
		res, err := ms[0].Request(ctx, "counter", id, wrapperspb.String("x"))
		if err != nil {
			b.Fatal(err)
		}
		addr := strings.Split(res.(*wrapperspb.StringValue).Value, "|")[0]
		if placed[addr] == "" {
			placed[addr] = id
		}
	}
	for _, c := range []struct{ name, id string }{{"local", placed[ms[0].Address()]}, {"remote", placed[ms[1].Address()]}} {
		if c.id == "" {
			b.Fatalf("no identity placed on the %s member", c.name)
		}
		b.Run(c.name, func(b *testing.B) {
			msg := wrapperspb.String("x")
			for b.Loop() {
				if _, err := ms[0].Request(ctx, "counter", c.id, msg); err != nil {
					b.Fatal(err)
				}
			}
		})
		// protoactor's own Cluster.Request, for the cost of the fence.
		b.Run(c.name+"-protoactor", func(b *testing.B) {
			msg := wrapperspb.String("x")
			for b.Loop() {
				if _, err := ms[0].Cluster().Request(c.id, "counter", msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
