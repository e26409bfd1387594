package telemetry_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/loopport"
	"github.com/agentos-run/agentos/internal/pgtest"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/internal/testutil"
	"github.com/agentos-run/agentos/telemetry"
)

// twoNodes starts two cluster members on loopback (seed list, no TLS:
// insecure_loopback) sharing a Git upstream, a signing key and a
// PostgreSQL journal (skipped without PostgreSQL installed), each
// exporting its spans over OTLP/HTTP to endpoint as service node1, node2.
func twoNodes(t *testing.T, endpoint string) []*host.Runtime {
	t.Helper()
	if raceEnabled {
		t.Skip("not under -race: protoactor's cluster and remote race internally (docs/CLUSTER.md)")
	}
	t.Setenv("TEST_OTEL_CLUSTER_JOURNAL", pgtest.Start(t)) // placement needs the shared journal
	t.Setenv("TEST_OTEL_CLUSTER_KEY", hex.EncodeToString([]byte("0123456789abcdef0123456789abcdef")))
	bare := filepath.Join(t.TempDir(), "tools.git")
	if err := repo.InitBare(bare, "main"); err != nil {
		t.Fatal(err)
	}
	var health []int
	var seeds []string
	// Drawn where no concurrent test's port 0 lands before the nodes bind them.
	ports, err := loopport.Reserve(2)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ports {
		health = append(health, p)
		seeds = append(seeds, fmt.Sprintf("127.0.0.1:%d", p))
	}
	rts := make([]*host.Runtime, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("node%d", i+1))
		if _, err := host.Init(dir, host.InitOptions{Upstream: bare}); err != nil {
			t.Fatal(err)
		}
		cfg, err := host.LoadConfig(dir)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Root, cfg.Isolation, cfg.Logger = dir, "inprocess", slog.New(slog.DiscardHandler)
		cfg.Capability.SigningKeyEnv = "TEST_OTEL_CLUSTER_KEY"
		cfg.JournalPostgresDSNEnv = "TEST_OTEL_CLUSTER_JOURNAL"
		cfg.Cluster = host.ClusterConfig{Enabled: true, Name: t.Name(), Seeds: seeds, HealthPort: health[i], InsecureLoopback: true}
		cfg.Tracing = telemetry.Config{Endpoint: endpoint, ServiceName: fmt.Sprintf("node%d", i+1)}
		wg.Go(func() { rts[i], errs[i] = host.Start(context.Background(), cfg) })
	}
	wg.Wait()
	for i, rt := range rts {
		if rt != nil {
			t.Cleanup(func() { _ = rt.Close() })
		}
		if errs[i] != nil {
			t.Fatalf("node %d: %v", i+1, errs[i])
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, rt := range rts {
		if err := rt.Member().WaitMembers(ctx, 2); err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
	}
	return rts
}

// An exec_tool placed on another member is one trace: the run's span,
// exported by the member that ran it, is the child of the kernel call's
// span exported by the caller's node.
func TestOTLPTraceAcrossNodes(t *testing.T) {
	clearEnv(t)
	r := &receiver{}
	rts := twoNodes(t, listenHTTP(t, r))
	write, _ := json.Marshal(map[string]string{"path": samples.FibPath, "content": samples.FibTool})
	if _, err := rts[0].Call(context.Background(), "write_file", write); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "node 2 pulls the tool", func() bool {
		_, err := os.Stat(filepath.Join(rts[1].Root(), filepath.FromSlash(samples.FibPath)))
		return err == nil
	})
	out, err := rts[0].Call(context.Background(), "exec_tool", json.RawMessage(`{"path":"tools/math/fib.ts","args":{"n":10},"placement":"`+rts[1].Member().Address()+`"}`))
	if err != nil || !strings.Contains(string(out), `"result":55`) {
		t.Fatalf("exec_tool placed on node 2: %s %v", out, err)
	}
	for _, rt := range rts {
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
	}
	call := one(t, r, "agentos.kernel.exec_tool")
	run := one(t, r, "execute_tool tools/math/fib.ts")
	if call.service != "node1" || run.service != "node2" {
		t.Fatalf("the kernel call was exported by %q and the run by %q; want node1 and node2", call.service, run.service)
	}
	childOf(t, run, call)
}
