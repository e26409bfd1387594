// Command governance-gate shows the registration gate: a tool with a bug
// is recorded on three inputs; its data files are then deleted (everything
// after is offline); a fix is refused under policy "block" because the
// replays of the recorded runs give different results (nothing is written
// or committed); a change that keeps every result is accepted with its
// report; and Runtime.CheckAgainstRuns shows old vs new without writing.
//
//	go run ./examples/governance-gate
//
// It exits 1 if the gate does not behave as described.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/governance/gate"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/transpile"
)

const tool = "tools/stats/sum.ts"

// buggy skips the first line, as if it were a header.
const buggy = `/** Sums the numbers of a file, one a line. */
export default async function (args: { file: string }): Promise<number> {
  const text: string = await tgp.read_file(args.file);
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  let total = 0;
  for (let i = 1; i < lines.length; i++) {
    total += Number(lines[i]);
  }
  return total;
}
`

var (
	fixed    = strings.Replace(buggy, "let i = 1", "let i = 0", 1)
	reworded = strings.Replace(buggy, "Sums the numbers", "Adds up the numbers", 1)
	data     = map[string]string{"tools/data/a.txt": "1\n2\n3\n", "tools/data/b.txt": "0\n5\n", "tools/data/c.txt": "10\n20\n"}
)

func main() {
	executor.WorkerMain() // MUST come first: sandbox workers are this binary re-executed
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("OK: the fix was refused under block, the rewording kept every result and landed")
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base, err := os.MkdirTemp("", "agentos-gate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	root := filepath.Join(base, "root")
	if _, err := host.Init(root, host.InitOptions{}); err != nil { // a bare upstream beside it
		return err
	}
	cfg, err := host.LoadConfig(root)
	if err != nil {
		return err
	}
	cfg.Root = root
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	cfg.Governance.Gate.Policy = "block"
	rt, err := host.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer rt.Close()

	call := func(name string, args any) (json.RawMessage, error) {
		b, _ := json.Marshal(args)
		return rt.Call(ctx, name, b)
	}
	if _, err := call("write_file", map[string]string{"path": tool, "content": buggy}); err != nil {
		return err
	}
	for p, body := range data {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			return err
		}
	}
	for _, f := range []string{"tools/data/a.txt", "tools/data/b.txt", "tools/data/c.txt"} {
		out, err := call("exec_tool", map[string]any{"path": tool, "args": map[string]string{"file": f}})
		if err != nil {
			return err
		}
		var r struct {
			Result json.RawMessage `json:"result"`
			RunID  string          `json:"run_id"`
		}
		_ = json.Unmarshal(out, &r)
		fmt.Printf("recorded run %s: sum of %s = %s\n", r.RunID, f, r.Result)
	}
	// Offline from here on: the replays can only answer from the journal.
	if err := os.RemoveAll(filepath.Join(root, "tools", "data")); err != nil {
		return err
	}

	// 1. The fix changes two of the three results: refused under block.
	_, err = call("patch_file", map[string]string{"path": tool, "search": "let i = 1", "replace": "let i = 0"})
	if !errors.Is(err, gate.ErrBlocked) {
		return fmt.Errorf("the fix should have been refused by the gate, got %v", err)
	}
	fmt.Println("patch_file (the fix): refused:", strings.SplitN(err.Error(), ". Nothing", 2)[0])
	if disk, _ := os.ReadFile(filepath.Join(root, tool)); string(disk) != buggy {
		return errors.New("the refused fix reached the working tree")
	}
	if t, _ := rt.Registry().Get(tool); t.Hash != transpile.Hash([]byte(buggy)) {
		return errors.New("the refused fix was registered")
	}
	fmt.Println("the working tree and the registry still hold the buggy version")

	// 2. What the fix changes, without writing it.
	rep, err := rt.CheckAgainstRuns(ctx, tool, []byte(fixed), 0)
	if err != nil {
		return err
	}
	for _, r := range rep.Runs {
		fmt.Printf("check against run %s: %s (old %s, new %s)\n", r.Run, r.Outcome, r.Old, r.New)
	}
	if rep.Different != 2 || rep.Same != 1 {
		return fmt.Errorf("CheckAgainstRuns: %+v", rep)
	}

	// 3. A change that keeps every result lands, with its report.
	out, err := call("write_file", map[string]string{"path": tool, "content": reworded})
	if err != nil {
		return fmt.Errorf("the rewording should land: %w", err)
	}
	var w struct {
		Commit string       `json:"commit"`
		Gate   *gate.Report `json:"gate"`
	}
	if err := json.Unmarshal(out, &w); err != nil || w.Gate == nil || w.Gate.Same != 3 || w.Commit == "" {
		return fmt.Errorf("the rewording's reply: %s", out)
	}
	fmt.Printf("write_file (rewording): committed %s; %s\n", w.Commit[:12], w.Gate.Summary())
	return nil
}
