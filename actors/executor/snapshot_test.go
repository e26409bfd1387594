package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/vfs"
)

// pokeDevice is a device whose one call rewrites a file of the tool root
// on disk, as another writer would while the run goes on.
func pokeDevice(root, name, content string) driver.Device {
	return driver.DeviceFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage("null"), os.WriteFile(filepath.Join(root, name), []byte(content), 0o644)
	})
}

func withPoke(name, content string) func(*Options) {
	return func(o *Options) {
		o.Devices = map[string]driver.Device{"poke": pokeDevice(o.Root, name, content)}
		o.Bindings = []Binding{{Name: "poke", Driver: "poke", Op: "go"}}
	}
}

func openJournal(t *testing.T) *journal.Journal {
	t.Helper()
	j, err := journal.Open(filepath.Join(t.TempDir(), "journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// countCalls counts the run's journaled calls of driver.op.
func countCalls(t *testing.T, j *journal.Journal, id, drv, op string) int {
	t.Helper()
	es, err := j.Entries(id)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if e.Driver == drv && e.Op == op {
			n++
		}
	}
	return n
}

// inModes runs f in process and in a worker: a run pins the same reads in
// both (in a worker, the worker keeps the answers the parent marks
// pinnable).
func inModes(t *testing.T, f func(t *testing.T, mode Isolation)) {
	for _, mode := range []Isolation{IsolationInProcess, IsolationProcess} {
		t.Run(string(mode), func(t *testing.T) { f(t, mode) })
	}
}

// slowStart gives a worker's start on a loaded machine, under -race, time.
func slowStart(o *Options) { o.Limits.Timeout = time.Minute }

// A run sees each file of the tool tree as its first read of it found it,
// under any name (tools/x, /lib/x), although the file changes on disk
// during the run; the journal holds that first read once, not every read;
// and replay gives the same result, even after the file changed again.
func TestSnapshotPinsToolReads(t *testing.T) {
	inModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"tools/data.txt": "one",
			"tools/read.ts": `export default async () => {
				const seen: string[] = [await tgp.read_file('tools/data.txt')];
				await tgp.poke();
				for (let i = 0; i < 50; i++) seen.push(await tgp.read_file('tools/data.txt'));
				seen.push(await tgp.read_file('/lib/data.txt'), await tgp.read_file('tools/./data.txt'));
				return [...new Set(seen)];
			};
	`}, withPoke("tools/data.txt", "two"), slowStart)
		j := openJournal(t)
		res, id, err := Record(context.Background(), e, j, Request{Path: "tools/read.ts"})
		if err != nil || !res.Success {
			t.Fatalf("%v %+v", err, res)
		}
		if string(res.Result) != `["one"]` {
			t.Fatalf("the run saw %s: a file of the tool tree changed under it (want [\"one\"])", res.Result)
		}
		if n := countCalls(t, j, id, driver.FSDriver, "read_file"); n != 1 {
			t.Fatalf("%d read_file calls journaled for 53 reads of one pinned file, want 1", n)
		}
		os.WriteFile(filepath.Join(e.Options().Root, "tools/data.txt"), []byte("three"), 0o644)
		rep, err := Replay(context.Background(), e, j, id, nil)
		if err != nil || !rep.Same || rep.Divergence != nil {
			t.Fatalf("replay: %v %+v", err, rep)
		}
		// The recording, not the disk, says which reads were pinned: replay
		// needs neither the file nor its name to resolve as it did (here a
		// link now, which a recording run would not pin).
		os.Remove(filepath.Join(e.Options().Root, "tools/data.txt"))
		if err := os.Symlink("other.txt", filepath.Join(e.Options().Root, "tools/data.txt")); err != nil {
			t.Fatal(err)
		}
		if rep, err = Replay(context.Background(), e, j, id, nil); err != nil || !rep.Same || rep.Divergence != nil {
			t.Fatalf("replay with the file gone: %v %+v", err, rep)
		}
	})
}

// What is not a file of the tools directory reached without a link is read
// as before, every time: data under the tool root, and a link in the tools
// directory to such data.
func TestSnapshotLeavesDataAndLinks(t *testing.T) {
	inModes(t, func(t *testing.T, mode Isolation) {
		for _, name := range []string{"data/d.txt", "tools/link.txt"} {
			t.Run(name, func(t *testing.T) {
				e := newExec(t, mode, map[string]string{
					"data/d.txt": "one",
					"tools/read.ts": fmt.Sprintf(`export default async () => {
						const a = await tgp.read_file(%q); await tgp.poke(); return [a, await tgp.read_file(%q)];
					};
	`, name, name)}, withPoke("data/d.txt", "two"), slowStart)
				if err := os.Symlink("../data/d.txt", filepath.Join(e.Options().Root, "tools/link.txt")); err != nil {
					t.Fatal(err)
				}
				j := openJournal(t)
				res, id, err := Record(context.Background(), e, j, Request{Path: "tools/read.ts"})
				if err != nil || string(res.Result) != `["one","two"]` {
					t.Fatalf("%v %+v: want both versions, read as before", err, res)
				}
				if n := countCalls(t, j, id, driver.FSDriver, "read_file"); n != 2 {
					t.Fatalf("%d read_file calls journaled, want 2", n)
				}
			})
		}
	})
}

// A run sees its own writes: from its first write on, its reads are made
// as before.
func TestSnapshotSeesOwnWrites(t *testing.T) {
	inModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"tools/out/x.txt": "old",
			"tools/rw.ts": `export default async () => {
				const a = await tgp.read_file('tools/out/x.txt');
				await tgp.write_file('tools/out/x.txt', 'new');
				return [a, await tgp.read_file('tools/out/x.txt'), await tgp.read_file('/lib/out/x.txt')];
			};
	`}, func(o *Options) { o.WriteDirs = []string{"tools/out"} }, slowStart)
		j := openJournal(t)
		res, id, err := Record(context.Background(), e, j, Request{Path: "tools/rw.ts"})
		if err != nil || string(res.Result) != `["old","new","new"]` {
			t.Fatalf("%v %+v", err, res)
		}
		if rep, err := Replay(context.Background(), e, j, id, nil); err != nil || !rep.Same || rep.Divergence != nil {
			t.Fatalf("replay: %v %+v", err, rep)
		}
	})
}

// revokingRights grant read on the tools directory until revoked, and
// count what they were asked.
type revokingRights struct {
	mu       sync.Mutex
	revoked  bool
	allowed  int
	refusals int
}

func (r *revokingRights) Covers(a vfs.Access, p string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return a == vfs.AccessRead && !r.revoked && strings.HasPrefix(p, "tools/")
}

func (r *revokingRights) Allow(a vfs.Access, p string) error {
	if r.Covers(a, p) {
		r.mu.Lock()
		r.allowed++
		r.mu.Unlock()
		return nil
	}
	r.mu.Lock()
	r.refusals++
	r.mu.Unlock()
	return fmt.Errorf("lacks the %q right on %q", a, p)
}

// revokeDevice revokes r when called: the caller's process ended.
func revokeDevice(r *revokingRights) func(*Options) {
	return func(o *Options) {
		o.Devices = map[string]driver.Device{"hook": driver.DeviceFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			r.mu.Lock()
			r.revoked = true
			r.mu.Unlock()
			return json.RawMessage("null"), nil
		})}
		o.Bindings = []Binding{{Name: "revoke", Driver: "hook", Op: "go"}}
	}
}

// Rights are checked on every read of a pinned file: each read counts as
// one use, and once the caller's rights are gone its next read is refused
// (once, journaled), exactly as an unpinned read is.
func TestSnapshotChecksRightsOnEveryRead(t *testing.T) {
	inModes(t, func(t *testing.T, mode Isolation) {
		r := &revokingRights{}
		e := newExec(t, mode, map[string]string{
			"tools/data.txt": "one",
			"tools/read.ts": `export default async () => {
				const out: string[] = [];
				for (let i = 0; i < 3; i++) out.push(await tgp.read_file('tools/data.txt'));
				await tgp.revoke();
				try { out.push(await tgp.read_file('tools/data.txt')); } catch (e) { out.push('refused: ' + e.code); }
				return out;
			};
	`}, revokeDevice(r), slowStart)
		j := openJournal(t)
		res, id, err := Record(context.Background(), e, j, Request{Path: "tools/read.ts", Rights: r})
		if err != nil || string(res.Result) != `["one","one","one","refused: security"]` {
			t.Fatalf("%v %+v", err, res)
		}
		if r.allowed != 3 || r.refusals != 1 {
			t.Fatalf("rights asked: %d allowed, %d refused; want 3 and 1 (one check per read)", r.allowed, r.refusals)
		}
		if n := countCalls(t, j, id, driver.FSDriver, "read_file"); n != 2 {
			t.Fatalf("%d read_file calls journaled, want 2 (the first read and the refusal)", n)
		}
		if rep, err := Replay(context.Background(), e, j, id, nil); err != nil || !rep.Same || rep.Divergence != nil {
			t.Fatalf("replay: %v %+v", err, rep)
		}
	})
}

// A refusal the read of a pinned file finds when the rights still cover it
// but Allow refuses (a use count spent): refused once, journaled, replayed.
func TestSnapshotRefusalAtAllowIsJournaled(t *testing.T) {
	inModes(t, func(t *testing.T, mode Isolation) {
		r := &budgetRights{left: 2}
		e := newExec(t, mode, map[string]string{
			"tools/data.txt": "one",
			"tools/read.ts": `export default async () => {
				const out: string[] = [];
				for (let i = 0; i < 3; i++) { try { out.push(await tgp.read_file('tools/data.txt')); } catch (e) { out.push('refused: ' + e.code); } }
				return out;
			};
	`}, slowStart)
		j := openJournal(t)
		res, id, err := Record(context.Background(), e, j, Request{Path: "tools/read.ts", Rights: r})
		if err != nil || string(res.Result) != `["one","one","refused: security"]` {
			t.Fatalf("%v %+v", err, res)
		}
		if r.refusals != 1 {
			t.Fatalf("%d refusals counted, want 1", r.refusals)
		}
		if n := countCalls(t, j, id, driver.FSDriver, "read_file"); n != 2 {
			t.Fatalf("%d read_file calls journaled, want 2 (the first read and the refusal)", n)
		}
		if rep, err := Replay(context.Background(), e, j, id, nil); err != nil || !rep.Same || rep.Divergence != nil {
			t.Fatalf("replay: %v %+v", err, rep)
		}
	})
}

// budgetRights cover the tools directory and allow left reads of it.
type budgetRights struct {
	left, refusals int
}

func (r *budgetRights) Covers(a vfs.Access, p string) bool {
	return a == vfs.AccessRead && strings.HasPrefix(p, "tools/")
}

func (r *budgetRights) Allow(a vfs.Access, p string) error {
	if r.Covers(a, p) && r.left > 0 {
		r.left--
		return nil
	}
	r.refusals++
	return fmt.Errorf("its token's uses are spent")
}

// Every jail rule refuses in a run that pins, as before: a read outside
// the caller's grant, links and .. out of the tools directory or the root,
// the root's internal names; each twice, after a pinned read, and the
// refusals are journaled.
func TestSnapshotKeepsJailRefusals(t *testing.T) {
	inModes(t, func(t *testing.T, mode Isolation) {
		for _, p := range []string{
			"secret/s.txt",           // outside the grant (tools/ only)
			"/lib/link.txt",          // a link out of /lib
			"/lib/../secret/s.txt",   // .. out of /lib
			"tools/../../etc/passwd", // .. out of the root
			"/etc/passwd",            // an absolute path
			".agentos/x.txt",         // the runtime's state
			"tools/.agentos/x.txt",   // at any depth
			".git/config",            // Git's
			"agentos.json",           // the root's configuration
		} {
			t.Run(p, func(t *testing.T) {
				e := newExec(t, mode, map[string]string{
					"tools/data.txt": "one",
					"secret/s.txt":   "S",
					".agentos/x.txt": "X", "tools/.agentos/x.txt": "X", ".git/config": "G", "agentos.json": "{}",
					"tools/read.ts": fmt.Sprintf(`export default async () => {
						const out: string[] = [await tgp.read_file('tools/data.txt')];
						for (let i = 0; i < 2; i++) { try { out.push(await tgp.read_file(%q)); } catch (e) { out.push(e.code); } }
						return out;
					};
	`, p)}, slowStart)
				if err := os.Symlink("../secret/s.txt", filepath.Join(e.Options().Root, "tools/link.txt")); err != nil {
					t.Fatal(err)
				}
				j := openJournal(t)
				r := &prefixRights{read: []string{"tools/"}}
				res, id, err := Record(context.Background(), e, j, Request{Path: "tools/read.ts", Rights: r})
				if err != nil || !res.Success {
					t.Fatalf("%v %+v", err, res)
				}
				var out []string
				json.Unmarshal(res.Result, &out)
				if len(out) != 3 || out[0] != "one" || out[1] == "S" || out[1] != out[2] || (out[1] != "security" && out[1] != "invalid") {
					t.Fatalf("reads gave %q: want the pinned read, then the same refusal twice", out)
				}
				if n := countCalls(t, j, id, driver.FSDriver, "read_file"); n != 3 {
					t.Fatalf("%d read_file calls journaled, want 3", n)
				}
			})
		}
	})
}

// A run under a journal that commits each call before its answer is used
// reads as before, in process and in a worker: nothing is pinned there.
func TestSnapshotNotUnderSyncEach(t *testing.T) {
	inModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"tools/data.txt": "one",
			"tools/read.ts":  "export default async () => { const a = await tgp.read_file('tools/data.txt'); await tgp.poke(); return [a, await tgp.read_file('tools/data.txt')]; };\n",
		}, withPoke("tools/data.txt", "two"), slowStart)
		j, err := journal.Open(filepath.Join(t.TempDir(), "journal.db"), journal.Options{Durability: journal.SyncEach})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		res, _, err := Record(context.Background(), e, j, Request{Path: "tools/read.ts"})
		if err != nil || string(res.Result) != `["one","two"]` {
			t.Fatalf("%v %+v", err, res)
		}
	})
}

// Reads of one file started together (Promise.all) are pinned by their
// order in the run, never by which answer comes first: the second read of
// a file waits for the first one's answer (in a worker, the parent's), so
// the journal holds one read and replay answers the others from the pin;
// a write among them drops the pins for every call after it. Repeated, so
// that a decision by timing would show.
func TestSnapshotPromiseAll(t *testing.T) {
	inModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"tools/data.txt":  "one",
			"tools/out/x.txt": "old",
			"tools/read.ts": `export default async () => {
				const a = await Promise.all([tgp.read_file('tools/data.txt'), tgp.read_file('tools/data.txt'), tgp.read_file('/lib/data.txt')]);
				await tgp.poke();
				const b = await Promise.all([tgp.read_file('/lib/data.txt'), tgp.read_file('tools/data.txt')]);
				const c = await Promise.all([tgp.read_file('tools/data.txt'), tgp.write_file('tools/out/x.txt', 'new'), tgp.read_file('tools/data.txt')]);
				return [...a, ...b, c[0], c[2], await tgp.read_file('tools/out/x.txt')];
			};
`}, withPoke("tools/data.txt", "two"), func(o *Options) { o.WriteDirs = []string{"tools/out"} }, slowStart)
		j := openJournal(t)
		for i := 0; i < 5; i++ {
			res, id, err := Record(context.Background(), e, j, Request{Path: "tools/read.ts"})
			if err != nil || string(res.Result) != `["one","one","one","one","one","one","two","new"]` {
				t.Fatalf("run %d: %v %+v", i, err, res)
			}
			// data.txt's first read and its read after the write, x.txt's.
			if n := countCalls(t, j, id, driver.FSDriver, "read_file"); n != 3 {
				t.Fatalf("run %d: %d read_file calls journaled, want 3", i, n)
			}
			os.WriteFile(filepath.Join(e.Options().Root, "tools/data.txt"), []byte("one"), 0o644)
			if rep, err := Replay(context.Background(), e, j, id, nil); err != nil || !rep.Same || rep.Divergence != nil {
				t.Fatalf("run %d: replay: %v %+v", i, err, rep)
			}
		}
	})
}

// A resumed run reads its recorded prefix's pinned files as recorded, and
// keeps them pinned after it: the file changed on disk while the run was
// stopped, and the resumed run still sees it as it first read it.
func TestSnapshotResumesPinned(t *testing.T) {
	inModes(t, func(t *testing.T, mode Isolation) {
		entered := make(chan struct{}, 1)
		var mu sync.Mutex
		blocked := false
		e := newExec(t, mode, map[string]string{
			"tools/data.txt": "one",
			"tools/read.ts": `export default async () => {
				const out: string[] = [];
				for (let i = 0; i < 3; i++) out.push(await tgp.read_file('tools/data.txt'));
				await tgp.block();
				for (let i = 0; i < 3; i++) out.push(await tgp.read_file('/lib/data.txt'));
				return out;
			};
	`}, func(o *Options) {
			o.Devices = map[string]driver.Device{"block": driver.DeviceFunc(func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
				mu.Lock()
				first := !blocked
				blocked = true
				mu.Unlock()
				if first {
					entered <- struct{}{}
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return json.RawMessage("null"), nil
			})}
			o.Bindings = []Binding{{Name: "block", Driver: "block", Op: "go"}}
		}, slowStart)
		j := openJournal(t)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-entered; cancel() }()
		res, id, err := Record(ctx, e, j, Request{Path: "tools/read.ts"})
		if err != nil || res.Error == nil || res.Error.Kind != ErrCancelled.Kind {
			t.Fatalf("want a cancelled run: %v %+v", err, res)
		}
		os.WriteFile(filepath.Join(e.Options().Root, "tools/data.txt"), []byte("two"), 0o644)
		rep, err := RecoverRun(context.Background(), e, j, id)
		if err != nil || !rep.Resumed || string(rep.Result.Result) != `["one","one","one","one","one","one"]` {
			t.Fatalf("%v %+v", err, rep)
		}
		if rp, err := Replay(context.Background(), e, j, id, nil); err != nil || !rp.Same || rp.Divergence != nil {
			t.Fatalf("replay of the resumed run: %v %+v", err, rp)
		}
	})
}

// A run's pins end with it: the next run on the same worker (one worker
// here) reads the file as it is then, and pins that.
func TestSnapshotEndsWithTheRun(t *testing.T) {
	inModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"tools/data.txt": "one",
			"tools/read.ts":  "export default async () => [await tgp.read_file('tools/data.txt'), await tgp.read_file('tools/data.txt')];\n",
		}, slowStart, func(o *Options) { o.Workers = 1 })
		j := openJournal(t)
		for _, want := range []string{"one", "two"} {
			os.WriteFile(filepath.Join(e.Options().Root, "tools/data.txt"), []byte(want), 0o644)
			res, id, err := Record(context.Background(), e, j, Request{Path: "tools/read.ts"})
			if err != nil || string(res.Result) != fmt.Sprintf(`[%q,%q]`, want, want) {
				t.Fatalf("%v %+v: want %q twice", err, res, want)
			}
			if n := countCalls(t, j, id, driver.FSDriver, "read_file"); n != 1 {
				t.Fatalf("%d read_file calls journaled, want 1", n)
			}
		}
	})
}

// The microtask order a tool observes around a pinned read, the ordering
// the in-process fast path keeps: a call's promise is settled by the run's
// loop after every microtask queued before it has run (a pinned read is
// answered at once, but its promise is not created settled), in process
// as in a worker, recorded as replayed. A promise settled at the call would
// put "read" right after "m1".
func TestSnapshotMicrotaskOrder(t *testing.T) {
	inModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"tools/data.txt": "one",
			"tools/read.ts": `export default async () => {
				const log: string[] = [await tgp.read_file('tools/data.txt')];
				const r = tgp.read_file('/lib/data.txt').then((s) => { log.push('read ' + s); });
				const r2 = tgp.read_file('tools/data.txt').then((s) => { log.push('read2 ' + s); });
				Promise.resolve().then(() => log.push('m1')).then(() => log.push('m2')).then(() => log.push('m3'));
				await r;
				log.push('after');
				await r2;
				return log;
			};
`}, slowStart)
		j := openJournal(t)
		const want = `["one","m1","m2","m3","read one","after","read2 one"]`
		for i := 0; i < 3; i++ {
			res, id, err := Record(context.Background(), e, j, Request{Path: "tools/read.ts"})
			if err != nil || string(res.Result) != want {
				t.Fatalf("run %d: %v %s %+v, want %s", i, err, res.Result, res.Error, want)
			}
			if n := countCalls(t, j, id, driver.FSDriver, "read_file"); n != 1 {
				t.Fatalf("run %d: %d read_file calls journaled, want 1 (the later two pinned)", i, n)
			}
			if rep, err := Replay(context.Background(), e, j, id, nil); err != nil || !rep.Same || rep.Divergence != nil {
				t.Fatalf("run %d: replay: %v %+v", i, err, rep)
			}
		}
	})
}
