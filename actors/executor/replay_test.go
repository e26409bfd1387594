package executor

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/internal/testutil"
	"github.com/agentos-run/agentos/journal"
)

// recEnv is a tool root with an executor, a journal and a "web" device: a stub
// driver with real I/O behind it (an HTTP server on loopback that counts the
// requests it receives).
type recEnv struct {
	root string
	ex   *Executor
	j    *journal.Journal
	hits atomic.Int64
}

// webDevice answers {"path": P} with the body the loopback server returns.
func webDevice(base string) driver.Device {
	return driver.DeviceFunc(func(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
		var a struct {
			Path string `json:"path"`
		}
		json.Unmarshal(req, &a)
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, base+a.Path, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return json.Marshal(string(body))
	})
}

func newRecEnv(t *testing.T, durability journal.Durability, files map[string]string) *recEnv {
	t.Helper()
	e := &recEnv{root: t.TempDir()}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.hits.Add(1)
		io.WriteString(w, "price of "+strings.TrimPrefix(r.URL.Path, "/")+" is 7")
	}))
	t.Cleanup(srv.Close)
	if err := os.MkdirAll(filepath.Join(e.root, "tools"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(e.root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	var err error
	e.ex, err = New(Options{Root: e.root, Isolation: IsolationInProcess,
		Devices:  map[string]driver.Device{"web": webDevice(srv.URL)},
		Bindings: []Binding{{Name: "get", Driver: "web", Op: "get", Params: []string{"path"}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.ex.Close() })
	e.j, err = journal.Open(filepath.Join(e.root, "journal.db"), journal.Options{Durability: durability})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.j.Check(); err != nil {
			t.Error(err)
		}
		e.j.Close()
	})
	return e
}

func (e *recEnv) exec(t *testing.T, path, args string) (execclient.Result, string) {
	t.Helper()
	res, id, err := Record(context.Background(), e.ex, e.j, Request{Path: path, Args: json.RawMessage(args)})
	if err != nil {
		t.Fatal(err)
	}
	return res, id
}

// quoteTool uses every source of nondeterminism a tool has.
const quoteTool = `/** Quotes an item: web price, a file discount, a random id and a timestamp. */
export default async function (args: { item: string }) {
  const [price, discount] = await Promise.all([tgp.get('/' + args.item), tgp.read_file('discount.txt')]);
  await tgp.write_file('/tmp/quote.txt', price);
  const again = await tgp.read_file('/tmp/quote.txt');
  tgp.log('quoted', args.item);
  return { price: again, discount: Number(discount), id: Math.random(), at: new Date().toISOString() };
}
`

func TestRecordThenReplayGivesTheSameResultOffline(t *testing.T) {
	for _, d := range []journal.Durability{journal.GroupCommit, journal.SyncEach, journal.NoSync} {
		t.Run(d.String(), func(t *testing.T) {
			e := newRecEnv(t, d, map[string]string{"tools/quote.ts": quoteTool, "discount.txt": "3"})
			res, id := e.exec(t, "tools/quote.ts", `{"item": "tea"}`)
			if !res.Success || !strings.Contains(string(res.Result), `"price":"price of tea is 7"`) {
				t.Fatalf("recorded run: %+v", res)
			}
			hits := e.hits.Load()
			os.WriteFile(filepath.Join(e.root, "discount.txt"), []byte("99"), 0o644) // the world changes...
			rep, err := Replay(context.Background(), e.ex, e.j, id, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Same || rep.Divergence != nil || string(rep.Result.Result) != string(res.Result) {
				t.Fatalf("replay differs:\nrecorded %s\nreplayed %s\n%+v", res.Result, rep.Result.Result, rep.Divergence)
			}
			if e.hits.Load() != hits {
				t.Fatal("replay reached the web server: a device was touched")
			}
			entries, _ := e.j.Entries(id)
			var ops []string
			for _, en := range entries {
				ops = append(ops, en.Driver+"."+en.Op)
			}
			if want := "web.get fs.read_file fs.write_file fs.read_file random.seed clock.now"; strings.Join(ops, " ") != want {
				t.Fatalf("recorded calls %v, want %s", ops, want)
			}
		})
	}
}

func TestReplayAgainstAPatchedTool(t *testing.T) {
	const buggy = `/** Total of an order: price times quantity (buggy: adds). */
export default async function (args: { item: string; qty: number }) {
  const text = await tgp.get('/' + args.item);
  const price = Number(text.split(' ').pop());
  return price + args.qty;
}
`
	e := newRecEnv(t, journal.GroupCommit, map[string]string{"tools/total.ts": buggy})
	res, id := e.exec(t, "tools/total.ts", `{"item": "tea", "qty": 3}`)
	if string(res.Result) != "10" {
		t.Fatalf("buggy result %s", res.Result)
	}
	hits := e.hits.Load()
	fixed := strings.Replace(buggy, "price + args.qty", "price * args.qty", 1)
	rep, err := Replay(context.Background(), e.ex, e.j, id, []byte(fixed))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Patched || rep.Same || rep.Divergence != nil || string(rep.Result.Result) != "21" {
		t.Fatalf("patched replay: %+v", rep)
	}
	if e.hits.Load() != hits {
		t.Fatal("patched replay reached the web server")
	}

	cases := []struct {
		name, src, code string
		seq             uint64
	}{
		{"asks for other I/O", strings.Replace(buggy, "'/' + args.item", "'/coffee'", 1), journal.CodeRequestDiffers, 1},
		{"asks for more I/O", strings.Replace(buggy, "return price + args.qty;", "await tgp.get('/milk');\n  return price;", 1), journal.CodeBeyondEnd, 2},
		{"asks for less I/O", "export default (args: { qty: number }) => args.qty;\n", journal.CodeUnconsumed, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Replay(context.Background(), e.ex, e.j, id, []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			d := rep.Divergence
			if d == nil || d.Code != tc.code || d.Seq != tc.seq {
				t.Fatalf("divergence %+v, want %s at #%d (result %+v)", d, tc.code, tc.seq, rep.Result)
			}
			if !strings.Contains(d.Error(), "["+tc.code+"]") {
				t.Fatalf("message %q lacks the code", d.Error())
			}
			if tc.code != journal.CodeUnconsumed && (rep.Result.Success || !strings.Contains(rep.Result.Error.Message, tc.code)) {
				t.Fatalf("the diverging run was not stopped with the code: %+v", rep.Result)
			}
		})
	}
}

func TestADivergenceCannotBeCaught(t *testing.T) {
	e := newRecEnv(t, journal.GroupCommit, map[string]string{"tools/a.ts": "export default async () => tgp.get('/tea');\n"})
	_, id := e.exec(t, "tools/a.ts", `{}`)
	sneaky := "export default async () => { try { return await tgp.get('/coffee'); } catch (e) { return 'swallowed'; } };\n"
	rep, _ := Replay(context.Background(), e.ex, e.j, id, []byte(sneaky))
	if rep.Result.Success || rep.Divergence == nil {
		t.Fatalf("the tool swallowed the divergence: %+v", rep.Result)
	}
}

func TestReplayUsesTheRecordedSourceAfterTheFileChanged(t *testing.T) {
	e := newRecEnv(t, journal.GroupCommit, map[string]string{"tools/v.ts": "export default () => 'v1';\n"})
	_, id := e.exec(t, "tools/v.ts", `{}`)
	os.WriteFile(filepath.Join(e.root, "tools/v.ts"), []byte("export default () => 'v2';\n"), 0o644)
	rep, err := Replay(context.Background(), e.ex, e.j, id, nil)
	if err != nil || !rep.Same || string(rep.Result.Result) != `"v1"` {
		t.Fatalf("%+v %v", rep, err)
	}
}

func TestRecoverMarksChangedToolsFailed(t *testing.T) {
	e := newRecEnv(t, journal.GroupCommit, map[string]string{"tools/v.ts": "export default () => 'v1';\n"})
	hash := sourceHash(t, e, "tools/v.ts")
	run, err := e.j.Begin(journal.RunMeta{Kind: "exec", Tool: "tools/v.ts", Hash: hash, Args: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(e.root, "tools/v.ts"), []byte("export default () => 'v2';\n"), 0o644)
	reports, err := Recover(context.Background(), e.ex, e.j)
	if err != nil || len(reports) != 1 || reports[0].Resumed || !strings.Contains(reports[0].Reason, "changed since the run started") {
		t.Fatalf("%+v %v", reports, err)
	}
	m, _ := e.j.Get(run.ID())
	if m.Status != journal.StatusFailed || m.Reason == "" {
		t.Fatalf("run not marked failed: %+v", m)
	}
	if again, _ := Recover(context.Background(), e.ex, e.j); len(again) != 0 {
		t.Fatalf("a failed run was recovered again: %+v", again)
	}
}

func sourceHash(t *testing.T, e *recEnv, path string) string {
	_, h, err := e.ex.Source(path)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestRunsAreListedAndFoundByPrefix(t *testing.T) {
	e := newRecEnv(t, journal.GroupCommit, map[string]string{"tools/a.ts": "export default () => 1;\n", "tools/b.ts": "export default () => { throw new Error('no'); };\n"})
	_, a := e.exec(t, "tools/a.ts", `{}`)
	// Distinct start times order the list: b starts once the clock has
	// passed a's start (at once, unless the clock is coarse).
	ma, err := e.j.Get(a)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the clock to pass run a's start", func() bool { return time.Now().After(ma.Started) })
	_, b := e.exec(t, "tools/b.ts", `{}`)
	runs, err := e.j.Runs()
	if err != nil || len(runs) != 2 || runs[0].ID != a || runs[1].ID != b || runs[0].Status != "ok" || runs[1].Status != "failed" {
		t.Fatalf("%+v %v", runs, err)
	}
	if m, err := e.j.Get(b[:len(b)-2]); err != nil || m.ID != b {
		t.Fatalf("prefix lookup: %+v %v", m, err)
	}
	if _, err := e.j.Get("nope"); !errors.Is(err, journal.ErrNoRun) {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := e.j.Get("2"); !errors.Is(err, journal.ErrAmbiguous) {
		t.Fatalf("ambiguous prefix: %v", err)
	}
}
