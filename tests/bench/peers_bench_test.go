package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/internal/benchutil"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/tests/internal/scenario"
)

// BenchmarkTGPShapes measures, through the Runtime's kernel tool API
// (rt.Call, as an agent or an embedder calls it), the paths that the
// TypeScript Tool Generation Protocol's benchmark
// (../shared/peers/tgp_bench.ts) times through its tool API, in the same
// shape: a default runtime (worker processes, the journal in its default
// GroupCommit mode) on a root whose tools are pushed to a local bare
// upstream.
//
//   - write_file: a new tool each time: the file, check, the registry, a
//     commit and its push (TGP's (a)).
//   - check_tool/new-source: a source never seen before each time (TGP
//     parses the file again at every check; agentos would answer a source it
//     has seen from its cache, which is not the same shape) (TGP's (b)).
//   - exec_tool/cached: fib(10), the same tool every time (TGP's (c), whose
//     every call transpiles again and builds a new isolate).
//   - exec_tool/new-source: fib(10) from a source never seen before each
//     time: transpile, compile and run, the work TGP's (c) does each call.
//
// The sources of the new-source cases are put on disk directly (not
// through write_file, which would time a commit and push as well); the
// tools read them from the root as TGP reads its files.
//
// Each also reports median-ns/op, the median iteration: TGP reports the
// median of its runs, and sidebyside compares that median with it.
//
// docs/PERFORMANCE.md puts these figures next to TGP's from the same
// window.
func BenchmarkTGPShapes(b *testing.B) {
	rt, dir, bare := benchRuntime(b)
	ctx := context.Background()
	call := func(tool string, args any) json.RawMessage {
		raw, _ := json.Marshal(args)
		out, err := rt.Call(ctx, tool, raw)
		if err != nil {
			b.Fatalf("%s: %v", tool, err)
		}
		return out
	}
	call("write_file", map[string]string{"path": samples.FibPath, "content": samples.FibTool})
	n := 0
	fresh := func() string { // a fib never seen before: the same code, a new comment
		n++
		return strings.Replace(samples.FibTool, "*/", fmt.Sprintf("(variant %d) */", n), 1)
	}
	put := func(path, src string) {
		if err := os.WriteFile(filepath.Join(dir, path), []byte(src), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "tools", "fresh"), 0o755); err != nil {
		b.Fatal(err)
	}

	b.Run("write_file", func(b *testing.B) {
		written := 0
		var laps benchutil.Laps
		defer laps.Report(b)
		for b.Loop() {
			args := map[string]string{"path": fmt.Sprintf("tools/bench/w%d.ts", n), "content": fresh()}
			laps.Start()
			out := call("write_file", args)
			laps.Stop()
			if !strings.Contains(string(out), `"commit":"`) {
				b.Fatalf("write_file did not commit: %s", out)
			}
			written++
		}
		pushed := 0 // as TGP's benchmark, check that every write reached the upstream
		for name := range scenario.UpstreamTree(b, bare, "main") {
			if strings.HasPrefix(name, "tools/bench/") {
				pushed++
			}
		}
		if pushed < written {
			b.Fatalf("the upstream has %d of the %d tools written", pushed, written)
		}
	})
	b.Run("check_tool/new-source", func(b *testing.B) {
		var laps benchutil.Laps
		defer laps.Report(b)
		for b.Loop() {
			b.StopTimer()
			path := fmt.Sprintf("tools/fresh/c%d.ts", n)
			put(path, fresh())
			b.StartTimer()
			laps.Start()
			out := call("check_tool", map[string]string{"path": path})
			laps.Stop()
			if !strings.Contains(string(out), `"valid":true`) {
				b.Fatalf("check_tool: %s", out)
			}
		}
	})
	exec := func(b *testing.B, laps *benchutil.Laps, path string) {
		laps.Start()
		out := call("exec_tool", map[string]any{"path": path, "args": map[string]int{"n": 10}})
		laps.Stop()
		var r struct {
			Success bool
			Result  json.RawMessage
		}
		if err := json.Unmarshal(out, &r); err != nil || !r.Success || string(r.Result) != "55" {
			b.Fatalf("exec_tool %s: %s %v", path, out, err)
		}
	}
	b.Run("exec_tool/cached", func(b *testing.B) {
		var laps benchutil.Laps
		defer laps.Report(b)
		for b.Loop() {
			exec(b, &laps, samples.FibPath)
		}
	})
	b.Run("exec_tool/new-source", func(b *testing.B) {
		var laps benchutil.Laps
		defer laps.Report(b)
		for b.Loop() {
			b.StopTimer()
			path := fmt.Sprintf("tools/fresh/e%d.ts", n)
			put(path, fresh())
			b.StartTimer()
			exec(b, &laps, path)
		}
	})
}

// benchRuntime starts a default runtime on a new root pushing to a new
// bare upstream, as `agentos init --upstream` makes one.
func benchRuntime(b testing.TB) (rt *host.Runtime, dir, bare string) {
	b.Helper()
	bare = filepath.Join(b.TempDir(), "tools.git")
	if err := repo.InitBare(bare, "main"); err != nil {
		b.Fatal(err)
	}
	dir = b.TempDir()
	if _, err := host.Init(dir, host.InitOptions{Upstream: bare}); err != nil {
		b.Fatal(err)
	}
	cfg, err := host.LoadConfig(dir)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Root, cfg.Logger = dir, scenario.Quiet
	if rt, err = host.Start(context.Background(), cfg); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := rt.Close(); err != nil {
			b.Error(err)
		}
	})
	return rt, dir, bare
}
