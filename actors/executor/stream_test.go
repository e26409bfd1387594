package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/journal"
)

// clockTool reads the clock and the random device, with a file read
// between them.
const clockTool = `export default async () => {
  const t = [];
  for (let i = 0; i < 5; i++) t.push(Date.now());
  const a = await tgp.read_file('a.txt');
  return { t, a, r: Math.random(), later: new Date().getTime() >= t[0] };
}
`

// TestStreamedCallsAreJournaledAlike records the same tool in both
// isolations under GroupCommit: in a worker its clock and random calls are
// answered there and streamed to the parent; the journal holds the same
// calls in the same order either way, and each run replays, with the file
// gone, to the recorded result.
func TestStreamedCallsAreJournaledAlike(t *testing.T) {
	ops := map[Isolation]string{}
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			e := newExec(t, mode, map[string]string{"tools/c.ts": clockTool, "a.txt": "alpha"})
			j, err := journal.Open(filepath.Join(t.TempDir(), "j.db"), journal.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			var streamedCalls atomic.Int64
			seen := func(next driver.Host) driver.Host {
				return driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
					if ctx.Value(streamedKey{}) != nil {
						streamedCalls.Add(1)
					}
					return next.Do(ctx, c)
				})
			}
			res, id, err := Record(context.Background(), e, j, Request{Path: "tools/c.ts", Middleware: []driver.Middleware{seen}})
			if err != nil || !res.Success || !strings.Contains(string(res.Result), `"later":true`) {
				t.Fatalf("%v %+v", err, res)
			}
			want := int64(0)
			if mode == IsolationProcess {
				want = 7 // 6 clock.now, 1 random.seed
			}
			if n := streamedCalls.Load(); n != want {
				t.Fatalf("%d calls were streamed, want %d", n, want)
			}
			entries, err := j.Entries(id)
			if err != nil {
				t.Fatal(err)
			}
			var list []string
			for i, en := range entries {
				if en.Seq != uint64(i+1) || en.Error != nil || len(en.Response) == 0 {
					t.Fatalf("entry %d: %+v", i, en)
				}
				list = append(list, en.Driver+"."+en.Op)
			}
			ops[mode] = strings.Join(list, " ")
			e.root.Remove("a.txt")
			rep, err := Replay(context.Background(), e, j, id, nil)
			if err != nil || !rep.Same || rep.Divergence != nil || string(rep.Result.Result) != string(res.Result) {
				t.Fatalf("replay: %v %+v", err, rep)
			}
		})
	}
	if ops[IsolationInProcess] != ops[IsolationProcess] {
		t.Fatalf("journaled calls differ:\n inprocess %s\n process   %s", ops[IsolationInProcess], ops[IsolationProcess])
	}
}

// TestKilledWorkerLosesNoStreamedCall SIGKILLs a worker right after its
// tool made 50 clock calls that it answered itself and streamed without
// waiting: every one of them is journaled (the parent reads what the
// worker wrote before it died), and the run stays resumable.
func TestKilledWorkerLosesNoStreamedCall(t *testing.T) {
	const tool = "export default async () => { for (let i = 0; i < 50; i++) Date.now(); await tgp.stop(); while (true) {} };\n"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := driver.DeviceFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		cancel() // the caller goes away: the parent SIGKILLs the worker
		return json.RawMessage("null"), nil
	})
	e := newExec(t, IsolationProcess, map[string]string{"tools/k.ts": tool}, func(o *Options) {
		o.Devices = map[string]driver.Device{"stop": stop}
		o.Bindings = []Binding{{Name: "stop", Driver: "stop", Op: "stop"}}
		o.Limits.Timeout = time.Minute
	})
	jpath := filepath.Join(t.TempDir(), "j.db")
	j, err := journal.Open(jpath, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, id, err := Record(ctx, e, j, Request{Path: "tools/k.ts"})
	if err != nil || res.Error == nil || res.Error.Kind != ErrCancelled.Kind {
		t.Fatalf("%v %+v", err, res)
	}
	j.Close() // committed, then read back from the file
	if j, err = journal.Open(jpath, journal.Options{}); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	entries, err := j.Entries(id)
	if err != nil {
		t.Fatal(err)
	}
	clock := 0
	for _, en := range entries {
		if en.Driver == driver.ClockDriver {
			clock++
		}
	}
	if clock != 50 || len(entries) != 51 {
		t.Fatalf("journaled %d entries, %d of them clock calls; want 51 and 50", len(entries), clock)
	}
	if m, err := j.Get(id); err != nil || m.Status != journal.StatusRunning {
		t.Fatalf("run status %q (%v), want %q: resumable", m.Status, err, journal.StatusRunning)
	}
}

// TestStreamedCallTheJournalCannotRecordFailsTheRun: a streamed call that
// the parent's Middleware fails (here a journal closed under the run) fails
// the run, as the call failing would have.
func TestStreamedCallTheJournalCannotRecordFailsTheRun(t *testing.T) {
	const tool = "export default async () => { try { await tgp.close(); } catch (e) {} return Date.now(); };\n"
	var j *journal.Journal
	closer := driver.DeviceFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		j.Close()
		return json.RawMessage("null"), nil
	})
	e := newExec(t, IsolationProcess, map[string]string{"tools/x.ts": tool}, func(o *Options) {
		o.Devices = map[string]driver.Device{"close": closer}
		o.Bindings = []Binding{{Name: "close", Driver: "close", Op: "close"}}
	})
	var err error
	if j, err = journal.Open(filepath.Join(t.TempDir(), "j.db"), journal.Options{}); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	res, _, _ := Record(context.Background(), e, j, Request{Path: "tools/x.ts"})
	if res.Error == nil || res.Error.Kind != ErrHostFailure.Kind || !strings.Contains(res.Error.Message, "clock.now") {
		t.Fatalf("%+v", fmt.Sprint(res.Error))
	}
}
