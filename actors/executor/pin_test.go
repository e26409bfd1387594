package executor

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/transpile"
)

// The tool of the pinning tests: it requires a library by /lib and a helper
// by a relative path, and the helper requires the library again.
const (
	pinTool   = "const x = require('/lib/lib/x');\nconst h = require('./helper');\nexport default async (args: { n: number }) => x.tag(h.twice(args.n));\n"
	pinHelper = "const x = require('./lib/x');\nexport function twice(n: number) { return x.mul(n, 2); }\n"
	pinX1     = "export function tag(n: number) { return 'v1:' + n; }\nexport function mul(a: number, b: number) { return a * b; }\n"
	pinX2     = "export function tag(n: number) { return 'v2:' + n; }\nexport function mul(a: number, b: number) { return a * b * 10; }\n"
)

func pinFiles() map[string]string {
	return map[string]string{"tools/t.ts": pinTool, "tools/helper.ts": pinHelper, "tools/lib/x.ts": pinX1}
}

func writeFile(t *testing.T, root, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A run records every module it required, by path and content hash, and
// the journal keeps their sources.
func TestARunRecordsEveryModuleItRequired(t *testing.T) {
	e := newRecEnv(t, journal.GroupCommit, pinFiles())
	res, id := e.exec(t, "tools/t.ts", `{"n": 4}`)
	if !res.Success || string(res.Result) != `"v1:8"` {
		t.Fatalf("%+v", res)
	}
	m, err := e.j.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	want := []journal.Module{
		{Path: "tools/lib/x.ts", Hash: transpile.Hash([]byte(pinX1))},
		{Path: "tools/helper.ts", Hash: transpile.Hash([]byte(pinHelper))},
	}
	if !m.Pinned || len(m.Modules) != len(want) || m.Modules[0] != want[0] || m.Modules[1] != want[1] {
		t.Fatalf("modules recorded: pinned %v %+v, want %+v", m.Pinned, m.Modules, want)
	}
	for _, mod := range m.Modules {
		src, err := e.j.Source(mod.Hash)
		if err != nil || transpile.Hash(src) != mod.Hash {
			t.Fatalf("source of %s: %v", mod.Path, err)
		}
	}
}

// The test: a tool requiring /lib/x, x changed (and, separately,
// deleted) after the run: replay uses the old x and gives the old result,
// in both isolations.
func TestReplayUsesTheRecordedModulesAfterTheTreeChanged(t *testing.T) {
	for _, mode := range modes {
		for _, change := range []string{"changed", "deleted"} {
			t.Run(string(mode)+"/"+change, func(t *testing.T) {
				ex := newExec(t, mode, pinFiles())
				j, err := journal.Open(filepath.Join(t.TempDir(), "j.db"), journal.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer j.Close()
				res, id, err := Record(context.Background(), ex, j, Request{Path: "tools/t.ts", Args: json.RawMessage(`{"n": 3}`)})
				if err != nil || string(res.Result) != `"v1:6"` {
					t.Fatalf("%v %+v", err, res)
				}
				root := ex.Options().Root
				if change == "changed" {
					writeFile(t, root, "tools/lib/x.ts", pinX2)
					if now := ex.Exec(context.Background(), Request{Path: "tools/t.ts", Args: json.RawMessage(`{"n": 3}`)}); string(now.Result) != `"v2:60"` {
						t.Fatalf("the tree's x is not v2: %+v", now)
					}
				} else if err := os.Remove(filepath.Join(root, "tools/lib/x.ts")); err != nil {
					t.Fatal(err)
				}
				rep, err := Replay(context.Background(), ex, j, id, nil)
				if err != nil || !rep.Same || string(rep.Result.Result) != `"v1:6"` || rep.Divergence != nil {
					t.Fatalf("replay did not run the recorded x: %+v %v", rep, err)
				}
				if len(rep.FromTree) != 0 || rep.ModulesNote != "" || len(rep.Modules) != 2 {
					t.Fatalf("modules of the replay: %+v %q %+v", rep.FromTree, rep.ModulesNote, rep.Modules)
				}
				// A patched entry still runs against the recorded modules.
				patched := strings.Replace(pinTool, "x.tag(", "'patched ' + x.tag(", 1)
				rep, err = Replay(context.Background(), ex, j, id, []byte(patched))
				if err != nil || string(rep.Result.Result) != `"patched v1:6"` || rep.Same {
					t.Fatalf("patched replay: %+v %v", rep, err)
				}
				// A new version of the library, given for the replay.
				rep, err = ReplayWith(context.Background(), ex, j, id, execclient.ReplayOptions{Sources: map[string][]byte{"tools/lib/x.ts": []byte(pinX2)}})
				if err != nil || string(rep.Result.Result) != `"v2:60"` || rep.Same || !strings.Contains(rep.ModulesNote, "tools/lib/x.ts") {
					t.Fatalf("replay with a new x: %+v %v", rep, err)
				}
			})
		}
	}
}

// A patched tool that requires a module the run did not: it is read from
// the tree, and the report says so.
func TestReplayReadsANewRequireFromTheTreeAndSaysSo(t *testing.T) {
	files := pinFiles()
	files["tools/lib/y.ts"] = "export const y = 'Y';\n"
	e := newRecEnv(t, journal.GroupCommit, files)
	_, id := e.exec(t, "tools/t.ts", `{"n": 1}`)
	patched := "const x = require('/lib/lib/x');\nconst y = require('/lib/lib/y');\nexport default async (args: { n: number }) => x.tag(args.n) + y.y;\n"
	rep, err := Replay(context.Background(), e.ex, e.j, id, []byte(patched))
	if err != nil || string(rep.Result.Result) != `"v1:1Y"` {
		t.Fatalf("%+v %v", rep, err)
	}
	if len(rep.FromTree) != 1 || rep.FromTree[0] != "tools/lib/y.ts" || !strings.Contains(rep.ModulesNote, "tools/lib/y.ts") {
		t.Fatalf("the new require is not reported: %+v %q", rep.FromTree, rep.ModulesNote)
	}
}

// A run recorded before agentos pinned modules (no module list) replays
// its requires from the tree, as it always did, and the report says so.
func TestAnUnpinnedRunReplaysItsRequiresFromTheTree(t *testing.T) {
	e := newRecEnv(t, journal.GroupCommit, pinFiles())
	src := []byte(pinTool)
	hash := transpile.Hash(src)
	if err := e.j.PutSource(hash, src); err != nil {
		t.Fatal(err)
	}
	run, err := e.j.Begin(journal.RunMeta{Kind: "exec", Tool: "tools/t.ts", Hash: hash, Args: json.RawMessage(`{"n": 2}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.End(journal.StatusOK, json.RawMessage(`"v1:4"`), nil); err != nil {
		t.Fatal(err)
	}
	writeFile(t, e.root, "tools/lib/x.ts", pinX2)
	rep, err := Replay(context.Background(), e.ex, e.j, run.ID(), nil)
	if err != nil || string(rep.Result.Result) != `"v2:40"` || rep.Same {
		t.Fatalf("%+v %v", rep, err)
	}
	if len(rep.FromTree) != 2 || !strings.Contains(rep.ModulesNote, "before agentos pinned modules") {
		t.Fatalf("%+v %q", rep.FromTree, rep.ModulesNote)
	}
}

// recordInterrupted records a run of tools/t2.ts that is cancelled by its
// caller at its second web call: it stays running, resumable.
func recordInterrupted(t *testing.T, e *recEnv) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopAtB := func(next driver.Host) driver.Host {
		return driver.HostFunc(func(c2 context.Context, c driver.Call) (json.RawMessage, error) {
			if c.Driver == "web" && strings.Contains(string(c.Request), "/b") {
				cancel()
				<-c2.Done()
				return nil, c2.Err()
			}
			return next.Do(c2, c)
		})
	}
	res, id, err := Record(ctx, e.ex, e.j, Request{Path: "tools/t2.ts", Args: json.RawMessage(`{}`), Middleware: []driver.Middleware{stopAtB}})
	if err != nil || res.Error == nil || !errors.Is(res.Error, ErrCancelled) {
		t.Fatalf("the run was not interrupted: %+v %v", res, err)
	}
	return id
}

// Recovery of an interrupted run resumes it with the modules it ran with,
// after the tree's x changed (or was deleted), and with the entry it
// started with after the entry changed.
func TestRecoveryResumesWithTheRecordedModules(t *testing.T) {
	const t2 = "const x = require('/lib/lib/x');\nexport default async () => { const a = await tgp.get('/a'); const b = await tgp.get('/b'); return x.tag(a.length + b.length); };\n"
	for _, change := range []string{"changed", "deleted"} {
		t.Run(change, func(t *testing.T) {
			files := pinFiles()
			files["tools/t2.ts"] = t2
			e := newRecEnv(t, journal.GroupCommit, files)
			id := recordInterrupted(t, e)
			hitsA := e.hits.Load()
			if change == "changed" {
				writeFile(t, e.root, "tools/lib/x.ts", pinX2)
				writeFile(t, e.root, "tools/t2.ts", "export default () => 'the entry changed';\n")
			} else {
				os.Remove(filepath.Join(e.root, "tools/lib/x.ts"))
				os.Remove(filepath.Join(e.root, "tools/t2.ts"))
			}
			reps, err := Recover(context.Background(), e.ex, e.j)
			if err != nil || len(reps) != 1 || reps[0].Outcome != OutcomeOK {
				t.Fatalf("%+v %v", reps, err)
			}
			// "price of a is 7" + "price of b is 7": 15 + 15.
			if got := string(reps[0].Result.Result); got != `"v1:30"` {
				t.Fatalf("the resumed run did not use the recorded x and entry: %s", got)
			}
			if e.hits.Load() != hitsA+1 {
				t.Fatalf("the recorded call was made again, or the missing one not made: %d calls, want %d", e.hits.Load(), hitsA+1)
			}
			m, _ := e.j.Get(id)
			if m.Status != journal.StatusOK || len(m.Modules) != 1 || m.Modules[0].Hash != transpile.Hash([]byte(pinX1)) {
				t.Fatalf("%+v", m)
			}
			rep, err := Replay(context.Background(), e.ex, e.j, id, nil)
			if err != nil || !rep.Same {
				t.Fatalf("the resumed run does not replay: %+v %v", rep, err)
			}
		})
	}
}

// A module first required after the crash point is read from the tree,
// journaled with the run, and reported.
func TestRecoveryJournalsAModuleRequiredAfterTheCrash(t *testing.T) {
	const t3 = "export default async () => { const a = await tgp.get('/a'); const b = await tgp.get('/b'); return require('/lib/lib/x').tag(a.length + b.length); };\n"
	files := pinFiles()
	files["tools/t2.ts"] = t3
	e := newRecEnv(t, journal.GroupCommit, files)
	id := recordInterrupted(t, e)
	if m, _ := e.j.Get(id); len(m.Modules) != 0 {
		t.Fatalf("the run required nothing before it stopped: %+v", m.Modules)
	}
	reps, err := Recover(context.Background(), e.ex, e.j)
	if err != nil || len(reps) != 1 || string(reps[0].Result.Result) != `"v1:30"` || len(reps[0].FromTree) != 1 || reps[0].ModulesNote == "" {
		t.Fatalf("%+v %v", reps, err)
	}
	writeFile(t, e.root, "tools/lib/x.ts", pinX2)
	rep, err := Replay(context.Background(), e.ex, e.j, id, nil)
	if err != nil || !rep.Same || string(rep.Result.Result) != `"v1:30"` {
		t.Fatalf("the module required after the crash was not journaled: %+v %v", rep, err)
	}
}

// tools/x.ts@<hash> runs that recorded version, with the modules it ran
// with; an unknown hash says which versions exist.
func TestCallByVersion(t *testing.T) {
	e := newRecEnv(t, journal.GroupCommit, pinFiles())
	_, id1 := e.exec(t, "tools/t.ts", `{"n": 5}`)
	v1 := transpile.Hash([]byte(pinTool))
	writeFile(t, e.root, "tools/t.ts", "const x = require('/lib/lib/x');\nexport default async (args: { n: number }) => 'new ' + x.tag(args.n);\n")
	writeFile(t, e.root, "tools/lib/x.ts", pinX2)
	res, _ := e.exec(t, "tools/t.ts", `{"n": 5}`)
	if string(res.Result) != `"new v2:5"` {
		t.Fatalf("current version: %+v", res)
	}
	res, id := e.exec(t, "tools/t.ts@"+v1[:8], `{"n": 5}`)
	if !res.Success || string(res.Result) != `"v1:10"` || res.Hash != v1 {
		t.Fatalf("the old version did not run with its modules: %+v", res)
	}
	m, _ := e.j.Get(id)
	if m.Tool != "tools/t.ts" || m.Hash != v1 || !m.AtVersion || len(m.Modules) != 2 || m.Modules[0].Hash != transpile.Hash([]byte(pinX1)) {
		t.Fatalf("the versioned run's record: %+v (first run %s)", m, id1)
	}
	// It replays like any run, with the same modules.
	if rep, err := Replay(context.Background(), e.ex, e.j, id, nil); err != nil || !rep.Same {
		t.Fatalf("%+v %v", rep, err)
	}
	vs, err := e.j.Versions("tools/t.ts")
	if err != nil || len(vs) != 2 || vs[0].Hash != v1 || vs[0].Runs != 2 || vs[1].Runs != 1 {
		t.Fatalf("versions: %+v %v", vs, err)
	}
	for _, bad := range []string{"tools/t.ts@00000000", "tools/t.ts@" + v1[:5]} {
		res, id := e.exec(t, bad, `{"n": 5}`)
		if res.Success || id != "" || res.Error.Kind != ErrNotFound.Kind || !strings.Contains(res.Error.Message, "tools/t.ts@"+v1[:12]) {
			t.Fatalf("%s: %+v", bad, res.Error)
		}
	}
	// Without the journal there is no version to run.
	if got := e.ex.Exec(context.Background(), Request{Path: "tools/t.ts@" + v1[:8]}); got.Success || !strings.Contains(got.Error.Message, "journal") {
		t.Fatalf("%+v", got.Error)
	}
}

// Prune keeps the sources of the modules of the runs it keeps.
func TestPruneKeepsTheModulesOfKeptRuns(t *testing.T) {
	files := pinFiles()
	files["tools/other.ts"] = "export default () => 1;\n"
	e := newRecEnv(t, journal.GroupCommit, files)
	e.exec(t, "tools/other.ts", `{}`)
	_, id := e.exec(t, "tools/t.ts", `{"n": 1}`)
	path := e.j.Path()
	if err := e.j.Close(); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(path, journal.Options{}) // sources put since Open are never pruned: reopen
	if err != nil {
		t.Fatal(err)
	}
	e.j = j
	rep, err := j.Prune(journal.PruneOptions{KeepRuns: 1})
	if err != nil || rep.Runs != 1 || rep.Sources != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
	os.Remove(filepath.Join(e.root, "tools/lib/x.ts"))
	os.Remove(filepath.Join(e.root, "tools/helper.ts"))
	if r, err := Replay(context.Background(), e.ex, j, id, nil); err != nil || !r.Same {
		t.Fatalf("%+v %v", r, err)
	}
}
