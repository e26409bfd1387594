package bench_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/internal/samples"
)

// IMPORTANT: the benchmarks run tools in sandbox workers, which are this
// test binary started again: WorkerMain MUST come first.
func TestMain(m *testing.M) {
	executor.WorkerMain()
	os.Exit(m.Run())
}

// The benchmarks' runtime runs a tool in a worker: without the TestMain
// above, every exec_tool benchmark failed, and go test ./... did not see it
// (it runs no benchmark).
func TestBenchRuntimeRunsATool(t *testing.T) {
	rt, _, _ := benchRuntime(t)
	ctx := context.Background()
	w, _ := json.Marshal(map[string]string{"path": samples.FibPath, "content": samples.FibTool})
	if _, err := rt.Call(ctx, "write_file", w); err != nil {
		t.Fatal(err)
	}
	x, _ := json.Marshal(map[string]any{"path": samples.FibPath, "args": map[string]int{"n": 10}})
	out, err := rt.Call(ctx, "exec_tool", x)
	if err != nil || !strings.Contains(string(out), `"result":55`) {
		t.Fatalf("exec_tool in a worker: %s %v", out, err)
	}
}
