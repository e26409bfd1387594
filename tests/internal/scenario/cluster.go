package scenario

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/loopport"
)

// Quiet is the logger of the nodes the scenarios start: it drops every record.
var Quiet = slog.New(slog.DiscardHandler)

// FreePorts reserves n loopback ports and releases them for the nodes to
// bind (the seed list names every node's health port before any starts):
// loopport.Reserve's, drawn where no concurrent test's port 0 lands.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports, err := loopport.Reserve(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// Cluster starts n nodes sharing the Git upstream bare, joined in one
// cluster by a seed list on loopback, signing tokens with one key, asking
// the scripted model at modelURL. tweak adjusts every node's config.
func Cluster(t testing.TB, n int, bare, modelURL string, tweak ...func(*host.Config)) []*host.Runtime {
	t.Helper()
	if RaceEnabled {
		t.Skip("not under -race: protoactor's cluster and remote race internally (docs/CLUSTER.md); the plain go test run runs this test")
	}
	t.Setenv("TEST_CLUSTER_KEY", hex.EncodeToString([]byte("0123456789abcdef0123456789abcdef")))
	health := FreePorts(t, n)
	seeds := make([]string, n)
	for i, p := range health {
		seeds[i] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	rts := make([]*host.Runtime, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n { // concurrently: every member start sleeps 1 s in protoactor
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("node%d", i+1))
		if _, err := host.Init(dir, host.InitOptions{Upstream: bare}); err != nil {
			t.Fatal(err)
		}
		cfg, err := host.LoadConfig(dir)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Root, cfg.Isolation, cfg.Logger = dir, "inprocess", Quiet
		cfg.LLM = host.LLMConfig{BaseURL: modelURL, Model: "scripted", ForgeAttempts: 1}
		cfg.Capability.SigningKeyEnv = "TEST_CLUSTER_KEY"
		cfg.Cluster = host.ClusterConfig{Enabled: true, Name: t.Name(), Seeds: seeds, HealthPort: health[i], InsecureLoopback: true}
		for _, f := range tweak {
			f(&cfg)
		}
		wg.Go(func() { rts[i], errs[i] = host.Start(context.Background(), cfg) })
	}
	wg.Wait()
	for i, rt := range rts {
		if rt != nil {
			t.Cleanup(func() {
				if err := rt.Close(); err != nil {
					t.Errorf("closing node %d: %v%s", i+1, err, stacksIfStuck(err))
				}
			})
		}
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, rt := range rts {
		if err := rt.Member().WaitMembers(ctx, n); err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
	}
	return rts
}

// stacksIfStuck returns, for a Close that timed out waiting for actors to
// stop, every goroutine's stack: what the stuck actor was doing, which the
// error alone cannot say. "" for any other error.
func stacksIfStuck(err error) string {
	if !errors.Is(err, system.ErrStopTimeout) {
		return ""
	}
	buf := make([]byte, 4<<20)
	return "\nthe goroutines:\n" + string(buf[:runtime.Stack(buf, true)])
}

// ForgeOn calls forge_tool for spec through rt's kernel tool API.
func ForgeOn(rt *host.Runtime, spec string) (forge.Result, error) {
	args, _ := json.Marshal(map[string]string{"spec": spec})
	out, err := rt.Call(context.Background(), "forge_tool", args)
	var res forge.Result
	if err == nil {
		err = json.Unmarshal(out, &res)
	}
	return res, err
}
