package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/governance/gate"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
)

// A forge whose tool replaces an existing tool source (here a file put in
// the tool root behind the registry's back, so the forge does not see the
// path as taken) is gated like a write: under block the forge fails with
// gate.ErrBlocked and nothing is committed; under warn the tool is kept
// and the forge's result carries the report.
func TestGateForge(t *testing.T) {
	for _, policy := range []string{"block", "warn"} {
		t.Run(policy, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"path": samples.FibPath, "code": samples.FibForged, "tests": samples.FibForgedTests})
			model := llmtest.NewServer([]llmtest.Step{{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "submit_tool", Arguments: string(args)}}}})
			defer model.Close()
			bare := upstream(t)
			rt, dir := gitRoot(t, bare, func(c *host.Config) {
				c.Governance.Gate.Policy = policy
				c.LLM = host.LLMConfig{BaseURL: model.URL(), Model: "scripted"}
			})
			full := filepath.Join(dir, filepath.FromSlash(samples.FibPath))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(samples.FibForgedBuggy), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{0, 1, 5} {
				args, _ := json.Marshal(map[string]any{"path": samples.FibPath, "args": map[string]int{"n": n}})
				if out, err := rt.Call(context.Background(), "exec_tool", args); err != nil || !strings.Contains(string(out), `"success":true`) {
					t.Fatalf("exec_tool: %s %v", out, err)
				}
			}
			before := len(history(t, bare))
			out, err := rt.Call(context.Background(), "forge_tool", json.RawMessage(`{"spec":"the n-th Fibonacci number"}`))
			if policy == "block" {
				if !errors.Is(err, gate.ErrBlocked) || !strings.Contains(err.Error(), "different") {
					t.Fatalf("forge under block: %s %v", out, err)
				}
				if len(history(t, bare)) != before {
					t.Fatal("the blocked forge committed")
				}
				if disk, _ := os.ReadFile(full); string(disk) != samples.FibForgedBuggy {
					t.Fatal("the blocked forge wrote the tool")
				}
				return
			}
			var res forge.Result
			if err != nil || json.Unmarshal(out, &res) != nil {
				t.Fatalf("forge under warn: %s %v", out, err)
			}
			// fib(0) and fib(5) change (1 -> 0, 8 -> 5); fib(1) does not.
			if res.Gate == nil || res.Gate.Different != 2 || res.Gate.Same != 1 || res.Commit == "" {
				t.Fatalf("forge result: %s", out)
			}
		})
	}
}
