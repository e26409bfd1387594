package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/internal/benchutil"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/tests/internal/scenario"
)

// bootTool is the source of the i-th tool of the boot benchmarks.
func bootTool(i int) (path, src string) {
	return fmt.Sprintf("tools/t%02d/tool%d.ts", i%10, i),
		fmt.Sprintf("/** Multiplies n by %d. @tag bench */\nexport default function tool%d(args: { n: number }): number {\n  return args.n * %d;\n}\n", i, i, i)
}

// bootWrite writes tools [from, to) through write_file: one commit and
// push each, as an agent makes them.
func bootWrite(b *testing.B, rt *host.Runtime, from, to int) {
	b.Helper()
	for i := from; i < to; i++ {
		p, src := bootTool(i)
		args, _ := json.Marshal(map[string]string{"path": p, "content": src})
		if _, err := rt.Call(context.Background(), "write_file", args); err != nil {
			b.Fatalf("write_file %s: %v", p, err)
		}
	}
}

// bootConfig is a new user's configuration of a tool root on bare.
func bootConfig(dir, bare string) host.Config {
	return host.Config{Root: dir, Git: host.GitConfig{Upstream: bare}, Isolation: "inprocess", Logger: scenario.Quiet}
}

// bootUpstream makes a bare upstream holding n tools made by n write_file
// commits, and returns it with the runtime that wrote them (open, for
// more commits).
func bootUpstream(b *testing.B, n int) (string, *host.Runtime) {
	b.Helper()
	bare := filepath.Join(b.TempDir(), "tools.git")
	if err := repo.InitBare(bare, "main"); err != nil {
		b.Fatal(err)
	}
	w, err := host.Start(context.Background(), bootConfig(b.TempDir(), bare))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	bootWrite(b, w, 0, n)
	return bare, w
}

// bootStart is what the boot benchmarks time: Start on dir, until the
// registry lists want tools.
func bootStart(b *testing.B, dir, bare string, want int) *host.Runtime {
	b.Helper()
	rt, err := host.Start(context.Background(), bootConfig(dir, bare))
	if err != nil {
		b.Fatal(err)
	}
	if got := len(rt.Registry().List()); got != want {
		b.Fatalf("the registry lists %d tools after Start, want %d", got, want)
	}
	return rt
}

// BenchmarkBoot100 is TGP's boot benchmark on equal terms: a fresh tool
// root, Start against a local bare upstream holding 100 tools made by 100
// write_file commits (one commit each), ending when the registry lists the
// 100 tools (clone, checkout, registry, journal, executor, kernel, node).
func BenchmarkBoot100(b *testing.B) {
	bare, _ := bootUpstream(b, 100)
	root := b.TempDir()
	var cpu time.Duration
	var laps benchutil.Laps
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := benchutil.CPUTime()
		laps.Start()
		rt := bootStart(b, filepath.Join(root, fmt.Sprint(i)), bare, 100)
		laps.Stop()
		cpu += benchutil.CPUTime() - start
		b.StopTimer()
		if err := rt.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	reportCPU(b, cpu)
	laps.Report(b)
}

// reportCPU reports the process CPU time of the timed parts per op
// (cpu-µs/op): on a loaded machine wall time follows the other tenants,
// CPU time much less.
func reportCPU(b *testing.B, cpu time.Duration) {
	b.ReportMetric(float64(cpu)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}

// BenchmarkReboot100 is a later boot: Start again on a tool root that
// booted before, after 3 new write_file commits upstream (another node's
// tools), ending when the registry lists them. Its cost MUST follow what
// changed (3 commits), not the history (100 commits and more).
func BenchmarkReboot100(b *testing.B) { benchReboot(b, 0) }

// BenchmarkReboot100Deep is BenchmarkReboot100 over a history three times
// as long: the same 100 tools, each rewritten twice more (300 commits).
// Its cost MUST be BenchmarkReboot100's.
func BenchmarkReboot100Deep(b *testing.B) { benchReboot(b, 2) }

func benchReboot(b *testing.B, rewrites int) {
	bare, w := bootUpstream(b, 100)
	for r := 1; r <= rewrites; r++ {
		for i := 0; i < 100; i++ {
			p, src := bootTool(i)
			args, _ := json.Marshal(map[string]string{"path": p, "content": src + fmt.Sprintf("// revision %d\n", r)})
			if _, err := w.Call(context.Background(), "write_file", args); err != nil {
				b.Fatalf("write_file %s: %v", p, err)
			}
		}
	}
	dir := b.TempDir()
	n := 100
	bootStart(b, dir, bare, n).Close()
	var cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		bootWrite(b, w, n, n+3)
		n += 3
		b.StartTimer()
		start := benchutil.CPUTime()
		rt := bootStart(b, dir, bare, n)
		cpu += benchutil.CPUTime() - start
		b.StopTimer()
		if err := rt.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	reportCPU(b, cpu)
}
