package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/agentos-run/agentos/internal/leaktest"
)

// leakOptions are the goroutines that outlive a member on their own
// schedule (see docs/CLUSTER.md).
var leakOptions = append([]goleak.Option{
	// The gossip's log throttles: a timer goroutine per throttled log
	// line, ending after the throttle's period (60 s for the gossiper).
	goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/cluster.(*Gossiper).StartGossiping.NewThrottle.func3.1"),
	goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/cluster.NewGossipActor.NewThrottleWithLogger.func2.1"),
	// The goroutine TestTestProviderLeaksGoroutines leaks on purpose (it
	// never ends: that is the defect shown).
	goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/cluster/clusterproviders/test.(*Provider).startTtlReport.func1"),
}, leaktest.Options...)

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	if raceEnabled && os.Getenv("AGENTOS_CLUSTER_RACE") == "" {
		// protoactor's cluster and remote race internally (grpclog's global
		// logger set at every remote start, the gossip state, the block
		// list, the member list, the etcd provider's flags): every test
		// here fails under -race for protoactor's races, none of ours.
		fmt.Println("cluster: tests not run under -race: protoactor's cluster races internally (docs/CLUSTER.md); " +
			"AGENTOS_CLUSTER_RACE=1 runs them anyway")
		os.Exit(0)
	}
	code := m.Run()
	if code == 0 {
		if err := findLeaks(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines outlived the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// findLeaks is goleak.Find waiting up to 5 s: protoactor's provider loops
// (automanaged's poll, etcd's keep-alive) sleep up to a second before they
// see a member has left.
func findLeaks(opts ...goleak.Option) error {
	opts = append(opts, leakOptions...)
	var err error
	for i := 0; i < 50; i++ {
		if err = goleak.Find(opts...); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// quiet is the logger of the test members: warnings and errors only.
func quiet(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.DiscardHandler)
}

// counterKind is a grain kind that answers "<member address>|<identity>|<n>"
// (n counts the messages the activation got) and counts its activations.
type counters struct {
	mu          sync.Mutex
	activations map[string]int
}

func newCounters() *counters { return &counters{activations: map[string]int{}} }

func (cs *counters) count(id string) int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.activations[id]
}

func (cs *counters) kind(name string) Kind {
	return Kind{Name: name, Props: actor.PropsFromProducer(func() actor.Actor {
		var n int64
		return actor.ReceiveFunc(func(c actor.Context) {
			switch c.Message().(type) {
			case *actor.Started:
			case *pcluster.ClusterInit:
				ci := pcluster.GetClusterIdentity(c)
				cs.mu.Lock()
				cs.activations[ci.Identity]++
				cs.mu.Unlock()
			case *wrapperspb.StringValue:
				n++
				ci := pcluster.GetClusterIdentity(c)
				c.Respond(wrapperspb.String(fmt.Sprintf("%s|%s|%d", c.ActorSystem().Address(), ci.Identity, n)))
			}
		})
	})}
}

// reserve returns n loopback listeners for the members' health endpoints
// and their addresses (the seeds).
func reserve(t testing.TB, n int) ([]net.Listener, []string) {
	t.Helper()
	lns := make([]net.Listener, n)
	addrs := make([]string, n)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i], addrs[i] = ln, ln.Addr().String()
	}
	return lns, addrs
}

// startSeeds joins n members of a fresh "seeds" cluster concurrently,
// each hosting kinds, and leaves them at the end of t.
func startSeeds(t testing.TB, n int, kinds ...Kind) []*Member {
	t.Helper()
	lns, seeds := reserve(t, n)
	opts := make([]Options, n)
	for i := range opts {
		opts[i] = Options{InsecureLoopback: true, Name: t.Name(), Seeds: seeds, HealthListener: lns[i], Kinds: kinds,
			RefreshInterval: 200 * time.Millisecond, Logger: quiet(t)}
	}
	return joinAll(t, opts)
}

// startEtcd joins n members of a fresh etcd cluster concurrently.
func startEtcd(t testing.TB, endpoint string, n int, kinds ...Kind) []*Member {
	t.Helper()
	opts := make([]Options, n)
	for i := range opts {
		opts[i] = Options{InsecureLoopback: true, Name: "c" + fmt.Sprint(time.Now().UnixNano()%1e6), Provider: ProviderEtcd,
			Etcd: EtcdOptions{Endpoints: []string{endpoint}}, Kinds: kinds, Logger: quiet(t)}
	}
	name := opts[0].Name
	for i := range opts {
		opts[i].Name = name
	}
	return joinAll(t, opts)
}

func joinAll(t testing.TB, opts []Options) []*Member {
	t.Helper()
	ms := make([]*Member, len(opts))
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	for i := range opts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			ms[i], errs[i] = Join(ctx, opts[i])
		}()
	}
	wg.Wait()
	t.Cleanup(func() { leaveAll(t, ms) })
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
	}
	return ms
}

func leaveAll(t testing.TB, ms []*Member) {
	var wg sync.WaitGroup
	for _, m := range ms {
		if m == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := m.Leave(ctx); err != nil {
				t.Errorf("leave %s: %v", m.Address(), err)
			}
		}()
	}
	wg.Wait()
}

func waitAll(t testing.TB, ms []*Member, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, m := range ms {
		if err := m.WaitMembers(ctx, n); err != nil {
			t.Fatalf("%s: %v", m.Address(), err)
		}
	}
}

// eventually polls cond every 50 ms until it holds or 20 s have passed.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 400; i++ {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("not within 20 s: %s", what)
}
