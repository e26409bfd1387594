package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/journal"
)

// TestSyncEachCommitsBeforeTheToolSeesTheResult checks the SyncEach promise
// in both isolations: when the tool has the answer of its k-th call, the
// journal holds that call committed. A "probe" device, called by the tool
// after each read and clock call, counts the run's committed entries (its own call is not
// yet among them).
func TestSyncEachCommitsBeforeTheToolSeesTheResult(t *testing.T) {
	const tool = "export default async () => { const seen = []; for (let i = 0; i < 5; i++) { await tgp.read_file('a.txt'); Date.now(); seen.push(await tgp.probe()); } return seen; };\n"
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			j, err := journal.Open(filepath.Join(t.TempDir(), "j.db"), journal.Options{Durability: journal.SyncEach})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			probe := driver.DeviceFunc(func(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
				runs, err := j.Unfinished()
				if err != nil || len(runs) != 1 {
					return nil, fmt.Errorf("runs in flight: %v %v", runs, err)
				}
				n, err := j.Count(runs[0].ID)
				if err != nil {
					return nil, err
				}
				return json.Marshal(n)
			})
			e := newExec(t, mode, map[string]string{"tools/p.ts": tool, "a.txt": "alpha"}, func(o *Options) {
				o.Devices = map[string]driver.Device{"probe": probe}
				o.Bindings = []Binding{{Name: "probe", Driver: "probe", Op: "count"}}
			})
			res, _, err := Record(context.Background(), e, j, Request{Path: "tools/p.ts"})
			if err != nil || !res.Success {
				t.Fatalf("%v %+v", err, res)
			}
			// Before the k-th probe (1-based), 3k-1 calls were answered
			// (a clock call among them: not streamed under SyncEach).
			if want := "[2,5,8,11,14]"; string(res.Result) != want {
				t.Fatalf("committed entries seen by the probes: %s, want %s", res.Result, want)
			}
		})
	}
}
