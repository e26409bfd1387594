// Command runtime-two-agents embeds the agentos runtime and runs two agent
// processes with different rights over the same tool root: an "author" that
// may write tools/ (and run them) and a "runner" that may only read and run
// them. The runner's write_file is refused by the kernel; its exec_tool of
// the author's tool runs in the sandbox.
//
//	go run ./examples/runtime-two-agents
//
// It exits 1 if the refused call is allowed or the allowed call fails.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/kerneltools"
)

const greet = `/** Greets someone by name. */
export default function (a: { name: string }): string {
  return "hello " + a.name;
}
`

func main() {
	executor.WorkerMain() // MUST come first: sandbox workers are this binary re-executed
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("OK: the runner was refused a write and allowed an exec")
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root, err := os.MkdirTemp("", "agentos-two-agents-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)

	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	rt, err := host.Start(ctx, host.Config{Root: root, Logger: quiet})
	if err != nil {
		return err
	}
	defer rt.Close()

	// Two agent processes: each has its own capability token (its rights)
	// and quota account. They live until the runtime closes.
	author, err := spawn(rt, "author", []capability.Grant{
		{Right: capability.Read, Scope: "tools/"},
		{Right: capability.Write, Scope: "tools/"},
		{Right: capability.Exec, Scope: "tools/"},
	})
	if err != nil {
		return err
	}
	runner, err := spawn(rt, "runner", []capability.Grant{
		{Right: capability.Read, Scope: "tools/"},
		{Right: capability.Exec, Scope: "tools/"},
	})
	if err != nil {
		return err
	}

	// The author writes a tool with its own kernel tools (what an LLM
	// would be handed as function-calling tools).
	if _, err := call(ctx, rt, author, "write_file", map[string]any{"path": "tools/greet.ts", "content": greet}); err != nil {
		return fmt.Errorf("the author could not write tools/greet.ts: %w", err)
	}
	fmt.Println("author  write_file tools/greet.ts: ok")

	// The runner tries to overwrite it: the kernel refuses (no write right).
	_, err = call(ctx, rt, runner, "write_file", map[string]any{"path": "tools/greet.ts", "content": "export default () => 'pwned';\n"})
	if !errors.Is(err, capability.ErrDenied) {
		return fmt.Errorf("the runner's write_file was not refused: %v", err)
	}
	fmt.Println("runner  write_file tools/greet.ts: refused:", firstLine(err.Error()))

	// The runner runs the author's tool: allowed (exec right on tools/).
	out, err := call(ctx, rt, runner, "exec_tool", map[string]any{"path": "tools/greet.ts", "args": map[string]any{"name": "ada"}})
	if err != nil {
		return fmt.Errorf("the runner's exec_tool was refused: %w", err)
	}
	var res kerneltools.ExecResult
	if err := json.Unmarshal(out, &res); err != nil {
		return fmt.Errorf("exec_tool answered %s: %w", out, err)
	}
	if !res.Success || string(res.Result.Result) != `"hello ada"` {
		return fmt.Errorf("exec_tool tools/greet.ts: %s", out)
	}
	fmt.Println("runner  exec_tool  tools/greet.ts: ok, result", string(res.Result.Result))
	return nil
}

// spawn starts an agent process named name with grants; it waits for the
// runtime to end it.
func spawn(rt *host.Runtime, name string, grants []capability.Grant) (*kernel.Process, error) {
	return rt.Kernel().Spawn(func(ctx context.Context, _ *kernel.Process) error {
		<-ctx.Done()
		return nil
	}, kernel.SpawnOptions{Name: name, Grants: grants, Quota: capability.Limits{capability.ToolCalls: 100}})
}

// call runs one kernel tool as p, exactly as an LLM's tool call would.
func call(ctx context.Context, rt *host.Runtime, p *kernel.Process, name string, args any) (json.RawMessage, error) {
	tools, err := rt.ToolsFor(p, name)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return tools[0].Call(ctx, raw)
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
