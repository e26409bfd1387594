package bench_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/tests/internal/scenario"
)

// BenchmarkGateWrite is write_file of a changed tool whose previous
// version has 5 recorded runs (each reading a file), with the gate off and
// replaying them (warn): what the gate adds to a write. Two versions
// alternate, both recorded, so every write replays 5 runs. No Git
// upstream: the write's own cost is the working tree and the registry.
// "exec5" is the reference: the 5 runs executed live (exec_tool) instead
// of a write, what the gate's replays are measured against.
func BenchmarkGateWrite(b *testing.B) {
	for _, bc := range []struct {
		name string
		runs int
	}{{"off", 0}, {"runs=5", 5}, {"exec5", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			runs := bc.runs
			cfg := host.Config{Root: dir, Isolation: "inprocess", Logger: slog.New(slog.DiscardHandler)}
			cfg.Governance.Gate.Runs = &runs
			rt, err := host.Start(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			if err := os.MkdirAll(filepath.Join(dir, "tools", "data"), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "tools", "data", "a.txt"), []byte("1\n2\n3\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			versions := []string{scenario.GateBuggy, strings.Replace(scenario.GateBuggy, "Sums the numbers", "Adds up the numbers", 1)}
			call := func(name string, args any) {
				a, _ := json.Marshal(args)
				if _, err := rt.Call(context.Background(), name, a); err != nil {
					b.Fatal(err)
				}
			}
			for _, v := range versions {
				call("write_file", map[string]string{"path": scenario.GateTool, "content": v})
				for range 5 {
					call("exec_tool", map[string]any{"path": scenario.GateTool, "args": map[string]string{"file": "tools/data/a.txt"}})
				}
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if bc.name == "exec5" {
					for range 5 {
						call("exec_tool", map[string]any{"path": scenario.GateTool, "args": map[string]string{"file": "tools/data/a.txt"}})
					}
					continue
				}
				call("write_file", map[string]string{"path": scenario.GateTool, "content": versions[i%2]})
			}
		})
	}
}
