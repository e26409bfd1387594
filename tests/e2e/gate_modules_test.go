package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/governance/gate"
	"github.com/agentos-run/agentos/internal/host"
)

// A change to a module replays the recorded runs of the tools that
// required it: under policy block, a library change that changes an entry's
// result is refused (nothing written or committed), and one that keeps
// every result lands with a report naming the entry's runs.
func TestGateReplaysRunsOfModuleChange(t *testing.T) {
	bare := upstream(t)
	rt, dir := gitRoot(t, bare, func(c *host.Config) { c.Governance.Gate.Policy = "block" })
	const (
		lib   = "tools/lib/scale.ts"
		entry = "tools/stats/scaled.ts"
	)
	libSrc := "/** Scales a number. */\nexport function scale(n: number): number {\n  return n * 2;\n}\n"
	write(t, rt, lib, libSrc)
	write(t, rt, entry, `import { scale } from "../lib/scale";

/** Scales a number through the library. */
export default function scaled(args: { n: number }): number {
  return scale(args.n);
}
`)
	var runs []string
	for _, n := range []int{1, 5, 0} {
		args, _ := json.Marshal(map[string]any{"path": entry, "args": map[string]int{"n": n}})
		out, err := rt.Call(context.Background(), "exec_tool", args)
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Success bool   `json:"success"`
			RunID   string `json:"run_id"`
		}
		if err := json.Unmarshal(out, &res); err != nil || !res.Success {
			t.Fatalf("exec_tool: %s (%v)", out, err)
		}
		runs = append(runs, res.RunID)
	}
	headBefore := history(t, bare)

	// The library now triples: the runs with n=1 and n=5 change.
	args, _ := json.Marshal(map[string]string{"path": lib, "content": strings.Replace(libSrc, "n * 2", "n * 3", 1)})
	_, err := rt.Call(context.Background(), "write_file", args)
	if !errors.Is(err, gate.ErrBlocked) {
		t.Fatalf("a module change that changes its entry's results: %v, want refused by the registration gate", err)
	}
	for _, id := range runs[:2] {
		if !strings.Contains(err.Error(), id+" (different: ") {
			t.Errorf("the refusal does not name the entry's run %s: %v", id, err)
		}
	}
	if disk, _ := os.ReadFile(filepath.Join(dir, lib)); string(disk) != libSrc {
		t.Fatalf("the refused module change reached the working tree: %s", disk)
	}
	if got := history(t, bare); len(got) != len(headBefore) {
		t.Fatalf("the refused module change was committed: %v", got)
	}

	// A change that keeps every result lands, reporting the entry's runs.
	args, _ = json.Marshal(map[string]string{"path": lib, "content": strings.Replace(libSrc, "n * 2", "2 * n", 1)})
	out, err := rt.Call(context.Background(), "write_file", args)
	if err != nil {
		t.Fatalf("a module change that keeps every result: %v", err)
	}
	rep := writtenGate(t, out)
	if rep == nil || rep.Same != 3 || rep.Dependents != 3 || rep.Blocked || len(rep.Runs) != 3 || rep.Runs[0].Tool != entry {
		t.Fatalf("the report of a module change: %s", out)
	}
}
