package executor

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentos-run/agentos/journal"
)

// Skip leaves the runs it selects alone (a serving node's runs in flight):
// they are neither resumed nor reported, and stay running.
func TestRecoverWithSkipLeavesTheSelectedRunsAlone(t *testing.T) {
	e := newRecEnv(t, journal.GroupCommit, map[string]string{"tools/v.ts": "export default () => 'v1';\n"})
	hash := sourceHash(t, e, "tools/v.ts")
	var ids []string
	for range 2 {
		run, err := e.j.Begin(journal.RunMeta{Kind: "exec", Tool: "tools/v.ts", Hash: hash, Args: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.ID())
	}
	skipped := ids[0]
	reports, err := RecoverWith(context.Background(), e.ex, e.j, RecoverOptions{Skip: func(m journal.RunMeta) bool { return m.ID == skipped }})
	if err != nil || len(reports) != 1 || reports[0].Run.ID != ids[1] || reports[0].Outcome != OutcomeOK || string(reports[0].Result.Result) != `"v1"` {
		t.Fatalf("%+v %v", reports, err)
	}
	if m, _ := e.j.Get(skipped); m.Status != journal.StatusRunning {
		t.Fatalf("the skipped run was touched: %+v", m)
	}
	if m, _ := e.j.Get(ids[1]); m.Status != journal.StatusOK {
		t.Fatalf("the resumed run did not end ok: %+v", m)
	}
}
