package host

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/journal"
)

// The node's journal endpoints keep the socket's request limit, and a
// recover request never resumes a run the node is executing (that would run
// it twice): 'agentos recover' on a serving node leaves runs in flight alone.
func TestNodeJournalEndpoints(t *testing.T) {
	root := t.TempDir()
	rt, c := serveRoot(t, root, Config{Limits: LimitsConfig{MaxArgsBytes: 64 << 10}})
	ctx := context.Background()
	spin := `/** Waits for tools/go.txt. */
export default async function (): Promise<string> {
  for (;;) {
    const files: string[] = await tgp.list_files("tools");
    if (files.includes("tools/go.txt")) return "went";
  }
}
`
	if err := os.WriteFile(filepath.Join(root, "tools", "spin.ts"), []byte(spin), 0o644); err != nil {
		t.Fatal(err)
	}

	// Over the limit: refused, naming the setting.
	big := json.RawMessage(`{"s":"` + strings.Repeat("x", 128<<10) + `"}`)
	if _, err := c.Exec(ctx, admin.ExecRequest{Path: "tools/spin.ts", Args: big}); err == nil || !strings.Contains(err.Error(), "max_args_bytes") {
		t.Fatalf("an exec request over the limit: %v, want a refusal naming limits.max_args_bytes", err)
	}

	type answer struct {
		rep admin.ExecReply
		err error
	}
	done := make(chan answer, 1)
	go func() {
		rep, err := c.Exec(ctx, admin.ExecRequest{Path: "tools/spin.ts", Timeout: time.Minute})
		done <- answer{rep, err}
	}()
	var id string
	deadline := time.Now().Add(30 * time.Second)
	for id == "" {
		runs, err := c.Runs(ctx, journal.RunQuery{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.Tool == "tools/spin.ts" && r.Status == journal.StatusRunning {
				id = r.ID
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the run never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.Recover(ctx, admin.RecoverRequest{Run: id}, new(NodeRecovery)); err == nil || !strings.Contains(err.Error(), "in flight") {
		t.Fatalf("recover --run of a run in flight: %v, want a refusal", err)
	}
	var rec NodeRecovery
	err := c.Recover(ctx, admin.RecoverRequest{}, &rec)
	if err != nil || len(rec.Now) != 0 {
		t.Fatalf("recover with a run in flight: %+v %v, want nothing resumed", rec, err)
	}
	if err := os.WriteFile(filepath.Join(root, "tools", "go.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil || !a.rep.Success || string(a.rep.Result.Result) != `"went"` || a.rep.Run != id {
		t.Fatalf("the run: %+v %v", a.rep, a.err)
	}
	d, err := c.Run(ctx, id[:len(id)-2])
	if err != nil || d.Run.ID != id || d.Run.Status != journal.StatusOK || d.Source != spin {
		t.Fatalf("the run through the node: %+v %v", d.Run, err)
	}
	if m, _ := rt.Journal().Get(id); m.Status != journal.StatusOK {
		t.Fatalf("the node's journal says %s", m.Status)
	}
}
