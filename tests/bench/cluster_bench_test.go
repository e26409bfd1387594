package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentos-run/agentos/cluster"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/pgtest"
	"github.com/agentos-run/agentos/internal/testutil"
	"github.com/agentos-run/agentos/tests/internal/scenario"
)

// BenchmarkClusterExec is exec_tool through the kernel tool API, journaled
// in the shared PostgreSQL journal, on a 2-node cluster in this process:
// run here ("local") against placed on the other node (the request crosses
// protoactor's remote on loopback, the other node's executor verifies the
// token and the content hash, journals the run and answers).
func BenchmarkClusterExec(b *testing.B) {
	for _, where := range []string{"local", "remote"} {
		b.Run(where, func(b *testing.B) {
			rts := benchCluster(b, 2, func(c *host.Config) {})
			placement := "local"
			if where == "remote" {
				placement = rts[1].Member().Address()
			}
			call := json.RawMessage(`{"path":"tools/math/fib.ts","args":{"n":20},"placement":"` + placement + `"}`)
			b.ResetTimer()
			for b.Loop() {
				out, err := rts[0].Call(context.Background(), "exec_tool", call)
				if err != nil || !strings.Contains(string(out), `"result":6765`) {
					b.Fatalf("%s %v", out, err)
				}
			}
		})
	}
}

// BenchmarkClusterForges forges 12 distinct specs at once against a
// scripted model that answers at once, on 1 node and on 3 nodes of one
// cluster in this process: specs forged per second. On one machine the
// nodes share its cores, so the ratio measures what distribution costs,
// not what more machines would gain.
func BenchmarkClusterForges(b *testing.B) {
	const specs = 12
	for _, nodes := range []int{1, 3} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			rts := benchCluster(b, nodes, func(c *host.Config) {})
			round := 0
			for b.Loop() {
				round++ // new specs each round: every one is forged, none reused
				var wg sync.WaitGroup
				for i := range specs {
					wg.Go(func() {
						rt := rts[i%len(rts)]
						if _, err := scenario.ForgeOn(rt, fmt.Sprintf("chaos tool %d: round %d", i, round)); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(specs*b.N)/b.Elapsed().Seconds(), "forges/s")
		})
	}
}

var benchSpecRE = regexp.MustCompile(`chaos tool (\d+):`)

// benchCluster starts n nodes sharing a PostgreSQL journal and a Git
// upstream holding tools/math/fib.ts, with a model answering any chaos
// spec at once.
func benchCluster(b *testing.B, n int, tweak func(*host.Config)) []*host.Runtime {
	b.Helper()
	if scenario.RaceEnabled {
		b.Skip("not under -race (docs/CLUSTER.md)")
	}
	dsn := pgtest.Start(b)
	b.Setenv("BENCH_CLUSTER_JOURNAL", dsn)
	model := llmtest.NewResponder(func(r llmtest.Received) llmtest.Step {
		i := 0
		for _, m := range r.Messages {
			if g := benchSpecRE.FindStringSubmatch(m.Content); g != nil {
				fmt.Sscan(g[1], &i)
			}
		}
		path := fmt.Sprintf("tools/bench/t%d_%d.ts", i, time.Now().UnixNano())
		code := fmt.Sprintf("/** Tags its text. */\nexport default function (args: { text: string }): string {\n  return \"t%d:\" + args.text;\n}\n", i)
		tests := fmt.Sprintf("const f = require('./%s').default;\nexport default async function (): Promise<void> {\n  if (f({ text: \"a\" }) !== \"t%d:a\") { throw new Error(\"bad\"); }\n}\n", strings.TrimSuffix(filepath.Base(path), ".ts"), i)
		args, _ := json.Marshal(map[string]string{"path": path, "code": code, "tests": tests})
		return llmtest.Step{ToolCalls: []llm.ToolCall{{ID: "call", Name: "submit_tool", Arguments: string(args)}}}
	})
	b.Cleanup(model.Close)
	bare := scenario.Upstream(b)
	// AGENTOS_BENCH_CLUSTER_TLS=1: the nodes talk over mutual TLS
	// (docs/PERFORMANCE.md compares both).
	var certs string
	if os.Getenv("AGENTOS_BENCH_CLUSTER_TLS") != "" {
		certs = b.TempDir()
		if _, err := cluster.MakeCA(certs, "bench", time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	node := 0
	rts := scenario.Cluster(b, n, bare, model.URL(), func(c *host.Config) {
		c.JournalPostgresDSNEnv = "BENCH_CLUSTER_JOURNAL"
		if certs != "" {
			node++
			cert, key, err := cluster.MakeMemberCert(certs, fmt.Sprint("n", node), nil, time.Hour)
			if err != nil {
				b.Fatal(err)
			}
			c.Cluster.Cert, c.Cluster.Key, c.Cluster.CA = cert, key, filepath.Join(certs, cluster.CACertFile)
			c.Cluster.InsecureLoopback = false
		}
		tweak(c)
	})
	scenario.WriteFib(b, rts[0])
	if n > 1 {
		testutil.Eventually(b, 10*time.Second, "the other nodes pull fib", func() bool {
			for _, rt := range rts[1:] {
				if _, err := os.Stat(filepath.Join(rt.Root(), "tools", "math", "fib.ts")); err != nil {
					return false
				}
			}
			return true
		})
	}
	return rts
}

// BenchmarkClusterExecThroughput is exec_tool calls from 6 concurrent
// callers on one node: on a lone node (every run there) and on a 3-node
// cluster with placement "spread" (a run goes to another node when this
// one is busy): runs per second. On one machine the nodes share its
// cores: the ratio shows what spreading costs or gains there, not on
// several machines.
func BenchmarkClusterExecThroughput(b *testing.B) {
	for _, c := range []struct {
		name      string
		nodes     int
		placement string
	}{{"nodes=1", 1, "local"}, {"nodes=3-spread", 3, "spread"}} {
		b.Run(c.name, func(b *testing.B) {
			rts := benchCluster(b, c.nodes, func(*host.Config) {})
			call := json.RawMessage(`{"path":"tools/math/fib.ts","args":{"n":20},"placement":"` + c.placement + `"}`)
			b.SetParallelism(3) // 6 callers on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					out, err := rts[0].Call(context.Background(), "exec_tool", call)
					if err != nil || !strings.Contains(string(out), `"result":6765`) {
						b.Errorf("%s %v", out, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
		})
	}
}
