package executor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/journal"
)

// countTool reads two files, asks the clock and draws a random number.
const countTool = `export default async () => {
  const a = await tgp.read_file('a.txt');
  let b = 'none';
  try { b = await tgp.read_file('missing.txt'); } catch (e) { b = String(e.code); }
  return { a, b, at: Date.now(), r: Math.random() };
}
`

// TestWorkerReplayAnswersInTheWorker records a run in process isolation,
// deletes what it read, and replays it in both isolations: the replays are
// the same, no device is touched, and in a worker no recorded call reaches
// the parent (the worker answers them from the recording it was handed).
func TestWorkerReplayAnswersInTheWorker(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			e := newExec(t, mode, map[string]string{"tools/count.ts": countTool, "a.txt": "alpha"})
			j, err := journal.Open(filepath.Join(t.TempDir(), "j.db"), journal.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			res, id, err := Record(context.Background(), e, j, Request{Path: "tools/count.ts"})
			if err != nil || !res.Success {
				t.Fatalf("%v %+v", err, res)
			}
			if err := os.Remove(filepath.Join(e.opts.Root, "a.txt")); err != nil { // the device's state is gone
				t.Fatal(err)
			}
			rep, err := j.Replayer(id)
			if err != nil {
				t.Fatal(err)
			}
			var reached atomic.Int64 // calls that reached the parent's chain
			count := func(next driver.Host) driver.Host {
				return driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
					reached.Add(1)
					return next.Do(ctx, c)
				})
			}
			src, _ := j.Source(rep.Meta().Hash)
			got := e.Exec(context.Background(), Request{Path: "tools/count.ts", Source: src, Replayed: true, Recorded: rep,
				Middleware: []driver.Middleware{count, rep.Middleware()}})
			if !got.Success || string(got.Result) != string(res.Result) {
				t.Fatalf("replayed %+v, recorded %s", got, res.Result)
			}
			if d := rep.Finish(); d != nil {
				t.Fatalf("divergence: %v", d)
			}
			want := int64(4) // in-process: every call goes through the chain
			if mode == IsolationProcess {
				want = 0
			}
			if n := reached.Load(); n != want {
				t.Fatalf("%d calls reached the parent's chain, want %d", n, want)
			}
		})
	}
}

// TestWorkerReplayDivergesAlike replays a recorded run against patched
// sources in both isolations: every divergence has the same code and
// message whether a worker answered the calls before it or not.
func TestWorkerReplayDivergesAlike(t *testing.T) {
	patches := map[string]string{
		journal.CodeRequestDiffers: "export default async () => { await tgp.read_file('a.txt'); return await tgp.read_file('b.txt'); };\n",
		journal.CodeBeyondEnd:      "export default async () => { for (let i = 0; i < 4; i++) await tgp.read_file('a.txt'); return 1; };\n",
		journal.CodeUnconsumed:     "export default async () => { await tgp.read_file('a.txt'); return 1; };\n",
	}
	const recorded = "export default async () => { await tgp.read_file('a.txt'); return await tgp.read_file('a.txt'); };\n"
	seen := map[string]map[Isolation]string{}
	for _, mode := range modes {
		e := newExec(t, mode, map[string]string{"tools/r.ts": recorded, "a.txt": "alpha"})
		j, err := journal.Open(filepath.Join(t.TempDir(), "j.db"), journal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		res, id, err := Record(context.Background(), e, j, Request{Path: "tools/r.ts"})
		if err != nil || !res.Success {
			t.Fatalf("%v %+v", err, res)
		}
		for code, patch := range patches {
			rep, err := Replay(context.Background(), e, j, id, []byte(patch))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Divergence == nil || rep.Divergence.Code != code {
				t.Fatalf("%s, %s: divergence %+v, want %s", mode, code, rep.Divergence, code)
			}
			if seen[code] == nil {
				seen[code] = map[Isolation]string{}
			}
			seen[code][mode] = strings.ReplaceAll(rep.Divergence.Error()+" | "+errText(rep.Result.Error), id, "<run>")
		}
		if rep, err := Replay(context.Background(), e, j, id, nil); err != nil || !rep.Same || rep.Divergence != nil {
			t.Fatalf("%s: unpatched replay: %v %+v", mode, err, rep)
		}
		j.Close()
	}
	for code, by := range seen {
		if by[IsolationInProcess] != by[IsolationProcess] {
			t.Errorf("%s differs between isolations:\n inprocess %s\n process   %s", code, by[IsolationInProcess], by[IsolationProcess])
		}
	}
}

func errText(e *Error) string {
	if e == nil {
		return ""
	}
	return string(e.Kind) + ": " + e.Message
}
