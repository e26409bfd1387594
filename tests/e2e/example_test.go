package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentos-run/agentos/actors/executor"
	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/kerneltools"
)

// Two agent processes with different rights: one may write tools/, the other
// may only run them. (examples/runtime-two-agents is the same as a program.)
func ExampleRuntime_ToolsFor() {
	root, _ := os.MkdirTemp("", "agentos-example")
	defer os.RemoveAll(root)
	ctx := context.Background()
	rt, err := host.Start(ctx, host.Config{Root: root, Isolation: "inprocess", Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	idle := func(ctx context.Context, _ *kernel.Process) error { <-ctx.Done(); return nil }
	author, _ := rt.Kernel().Spawn(idle, kernel.SpawnOptions{Name: "author", Grants: []capability.Grant{
		{Right: capability.Write, Scope: "tools/"}, {Right: capability.Exec, Scope: "tools/"}}})
	runner, _ := rt.Kernel().Spawn(idle, kernel.SpawnOptions{Name: "runner", Grants: []capability.Grant{
		{Right: capability.Read, Scope: "tools/"}, {Right: capability.Exec, Scope: "tools/"}}})
	authorTools, _ := rt.ToolsFor(author, "write_file")
	runnerTools, _ := rt.ToolsFor(runner, "write_file", "exec_tool")

	src, _ := json.Marshal(map[string]string{"path": "tools/hi.ts", "content": "/** Says hi. */\nexport default function (): string { return \"hi\"; }\n"})
	_, err = authorTools[0].Call(ctx, src)
	fmt.Println("author write_file:", err)
	_, err = runnerTools[0].Call(ctx, src)
	fmt.Println("runner write_file refused:", errors.Is(err, capability.ErrDenied))
	out, _ := runnerTools[1].Call(ctx, json.RawMessage(`{"path":"tools/hi.ts"}`))
	var res kerneltools.ExecResult
	_ = json.Unmarshal(out, &res)
	fmt.Println("runner exec_tool:", res.Success, string(res.Result.Result))
	// Output:
	// author write_file: <nil>
	// runner write_file refused: true
	// runner exec_tool: true "hi"
}

// Record a run of a buggy tool, then replay it offline against a patched
// version: the fix is fed the very answers the run saw, even after the data
// changed. (examples/replay-debug-patched does the same with a fetch.)
func ExampleReplayWith() {
	root, _ := os.MkdirTemp("", "agentos-example")
	defer os.RemoveAll(root)
	_ = os.MkdirAll(filepath.Join(root, "tools"), 0o755)
	_ = os.WriteFile(filepath.Join(root, "tools", "prices.json"), []byte(`["1.50", "2.25"]`), 0o644)
	buggy := "/** Totals the prices. */\nexport default async function (): Promise<string> {\n  const p: string[] = JSON.parse(await tgp.read_file(\"tools/prices.json\"));\n  return p.reduce((t, x) => t + x, \"\");\n}\n"
	fixed := "/** Totals the prices. */\nexport default async function (): Promise<number> {\n  const p: string[] = JSON.parse(await tgp.read_file(\"tools/prices.json\"));\n  return p.reduce((t, x) => t + Number(x), 0);\n}\n"
	_ = os.WriteFile(filepath.Join(root, "tools", "total.ts"), []byte(buggy), 0o644)

	cfg := host.Config{Root: root, Isolation: "inprocess", Logger: quiet}
	setup, err := cfg.OpenExecutorSetup(root, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer setup.Close()
	ex, _ := setup.NewExecutor(nil)
	defer ex.Close()
	j, _ := cfg.OpenJournal(root, "")
	defer j.Close()

	ctx := context.Background()
	res, run, _ := executor.Record(ctx, ex, j, executor.Request{Path: "tools/total.ts", Args: json.RawMessage(`{}`)})
	fmt.Println("recorded:", string(res.Result))
	// The data changes; the replay still sees what the run read.
	_ = os.WriteFile(filepath.Join(root, "tools", "prices.json"), []byte(`["9"]`), 0o644)
	rep, _ := executor.ReplayWith(ctx, ex, j, run, execclient.ReplayOptions{})
	fmt.Println("replayed:", string(rep.Result.Result), "same:", rep.Same)
	rep, _ = executor.ReplayWith(ctx, ex, j, run, execclient.ReplayOptions{Patched: []byte(fixed)})
	fmt.Println("patched:", string(rep.Result.Result), "divergence:", rep.Divergence != nil)
	// Output:
	// recorded: "1.502.25"
	// replayed: "1.502.25" same: true
	// patched: 3.75 divergence: false
}
