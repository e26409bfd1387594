package e2e_test

import (
	"github.com/agentos-run/agentos/internal/host"

	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentos-run/agentos/internal/leaktest"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/journal"
)

func TestMain(m *testing.M) {
	executor.WorkerMain()
	if os.Getenv("AGENTOS_CRASH_CHILD") == "1" {
		crashChild()
		return
	}
	if os.Getenv("AGENTOS_GC_CRASH_CHILD") == "1" {
		groupCrashChild()
		return
	}
	// The cluster tests close nodes while requests to them are in flight
	// (a forge's charge to its caller's home node, a catch-up pull): such
	// an abandoned request's goroutine waits for its reply until its
	// timeout, as system.Ask documents (resolving the future early races
	// inside protoactor), and may outlive the last test by seconds.
	goleak.VerifyTestMain(m, append(leaktest.Options, goleak.IgnoreAnyFunction("github.com/agentos-run/agentos/actors/system.Ask.func1"))...)
}

// longTool makes n paid calls (think: LLM or web requests) and mixes their
// answers with Math.random and Date, so a resumed run only matches an
// uninterrupted one if the recorded prefix is replayed exactly.
const longTool = `/** Calls a paid device n times and folds the answers. */
export default async function (args: { n: number }) {
  let acc = 0;
  for (let i = 0; i < args.n; i++) {
    const answer: string = await tgp.paid('item-' + i);
    acc = (acc * 31 + answer.length + Math.floor(Math.random() * 1000)) % 1000003;
  }
  return { acc, at: Date.now() };
}
`

const crashCalls = 300

// crashExecutor is an executor whose clock, seed and paid device are fixed,
// so a live continuation answers exactly what the crashed process would have.
func crashExecutor(root string, paid *atomic.Int64) (*executor.Executor, error) {
	return executor.New(executor.Options{
		Root: root, Isolation: executor.IsolationInProcess,
		Seed:  func() uint64 { return 42 },
		Clock: func() time.Time { return time.UnixMilli(1_780_000_000_000) },
		Devices: map[string]driver.Device{"paid": driver.DeviceFunc(func(_ context.Context, _ string, req json.RawMessage) (json.RawMessage, error) {
			paid.Add(1)
			var a struct{ Item string }
			json.Unmarshal(req, &a)
			return json.Marshal("answer to " + a.Item)
		})},
		Bindings: []executor.Binding{{Name: "paid", Driver: "paid", Op: "ask", Params: []string{"item"}}},
	})
}

// crashChild records the long run with fsync per call and prints "ack N"
// after call N is journaled; the parent kills it at a chosen point.
func crashChild() {
	root, jpath := os.Getenv("AGENTOS_CRASH_ROOT"), os.Getenv("AGENTOS_CRASH_JOURNAL")
	var paid atomic.Int64
	ex, err := crashExecutor(root, &paid)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	j, err := journal.Open(jpath, journal.Options{Durability: journal.SyncEach})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	src, hash, _ := ex.Source("tools/long.ts")
	j.PutSource(hash, src)
	run, err := j.Begin(journal.RunMeta{Kind: "exec", Tool: "tools/long.ts", Hash: hash, Args: json.RawMessage(fmt.Sprintf(`{"n": %d}`, crashCalls))})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	fmt.Println("run", run.ID())
	ack := func(next driver.Host) driver.Host {
		return driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
			v, err := next.Do(ctx, c) // the journal middleware inside has committed and fsynced
			fmt.Println("ack", c.Seq)
			return v, err
		})
	}
	res := ex.Exec(context.Background(), executor.Request{Path: "tools/long.ts", Args: run.Meta().Args, Middleware: []driver.Middleware{ack, run.Middleware()}})
	executor.EndRun(run, res)
	j.Close()
	fmt.Println("done")
	os.Exit(0)
}

func TestCrashAndRecover(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash test starts and kills child processes")
	}
	root := t.TempDir()
	if _, err := host.Init(root, host.InitOptions{NoGit: true}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "tools", "long.ts"), []byte(longTool), 0o644)

	// The reference: the same run, never interrupted.
	var paid atomic.Int64
	ex, err := crashExecutor(root, &paid)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	want := ex.Exec(context.Background(), executor.Request{Path: "tools/long.ts", Args: json.RawMessage(fmt.Sprintf(`{"n": %d}`, crashCalls))})
	if !want.Success {
		t.Fatal(want.Error)
	}
	totalCalls := want.Calls

	// The kill points are spread evenly over the run, from before its first
	// acknowledged call to near its end: every run of the test kills at the
	// same places, so a failure names a kill point that reproduces it.
	const trials = 16
	for trial := range trials {
		killAfter := trial * int(totalCalls) / trials
		t.Run(fmt.Sprintf("kill-after-%d-acks", killAfter), func(t *testing.T) {
			jpath := filepath.Join(t.TempDir(), fmt.Sprintf("journal-%d.db", trial))
			runID, acked := runAndKill(t, root, jpath, killAfter)

			j, err := journal.Open(jpath, journal.Options{Durability: journal.SyncEach})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			if err := j.Check(); err != nil {
				t.Fatalf("after SIGKILL: %v", err)
			}
			entries, err := j.Entries(runID)
			if err != nil {
				t.Fatal(err)
			}
			have := map[uint64]bool{}
			for _, e := range entries {
				have[e.Seq] = true
			}
			for _, seq := range acked {
				if !have[seq] {
					t.Fatalf("call #%d was acknowledged under fsync-per-op but is not in the journal", seq)
				}
			}
			paid.Store(0)
			meta, err := j.Get(runID)
			if err != nil {
				t.Fatal(err)
			}
			reports, err := executor.Recover(context.Background(), ex, j)
			if err != nil {
				t.Fatal(err)
			}
			if meta.Status != journal.StatusRunning {
				// The last few calls and the end outran the SIGKILL: the
				// run is complete and there is nothing to recover.
				if len(reports) != 0 || meta.Status != journal.StatusOK {
					t.Fatalf("a run that ended %q before the kill: recover %+v", meta.Status, reports)
				}
				return
			}
			if len(reports) != 1 || !reports[0].Resumed {
				t.Fatalf("recover: %+v", reports)
			}
			got := reports[0].Result
			if !got.Success || string(got.Result) != string(want.Result) {
				t.Fatalf("recovered result %s (%+v), uninterrupted %s", got.Result, got.Error, want.Result)
			}
			// Nothing is paid twice: only the calls missing from the journal
			// reached the device.
			recordedPaid := 0
			for _, e := range entries {
				if e.Driver == "paid" {
					recordedPaid++
				}
			}
			if int(paid.Load()) != crashCalls-recordedPaid {
				t.Fatalf("recovery paid %d calls; %d were recorded of %d", paid.Load(), recordedPaid, crashCalls)
			}
			m, _ := j.Get(runID)
			after, _ := j.Entries(runID)
			if m.Status != journal.StatusOK || uint64(len(after)) != totalCalls {
				t.Fatalf("after recovery: status %s, %d entries, want ok and %d", m.Status, len(after), totalCalls)
			}
		})
	}
}

// runAndKill starts the child, SIGKILLs it after it acknowledged killAfter
// calls, and returns the run id and the acknowledged sequence numbers.
func runAndKill(t *testing.T, root, jpath string, killAfter int) (string, []uint64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AGENTOS_CRASH_CHILD=1", "AGENTOS_CRASH_ROOT="+root, "AGENTOS_CRASH_JOURNAL="+jpath)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var runID string
	var acked []uint64
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "run" {
			runID = f[1]
		}
		if len(f) == 2 && f[0] == "ack" {
			n, _ := strconv.ParseUint(f[1], 10, 64)
			acked = append(acked, n)
			if len(acked) >= killAfter {
				cmd.Process.Kill()
				break
			}
		}
		if len(f) > 0 && f[0] == "error" {
			t.Fatalf("child: %s", sc.Text())
		}
	}
	if killAfter == 0 {
		cmd.Process.Kill()
	}
	cmd.Wait()
	if runID == "" {
		t.Fatal("the child never started its run")
	}
	return runID, acked
}

// shortTool is a short run with two paid calls, the shape of most exec_tool
// runs: its result depends on the recorded answers, the seed and the clock.
const shortTool = `/** Two paid calls, folded. */
export default async function (args: { i: number }) {
  const a: string = await tgp.paid('a-' + args.i);
  const b: string = await tgp.paid('b-' + args.i);
  return { i: args.i, len: a.length + b.length, r: Math.floor(Math.random() * 1000), at: Date.now() };
}
`

// groupCrashChild records short runs one after another under GroupCommit,
// with process isolation (the default), and prints "ended I ID" once
// Record returned run I, whose caller has then seen its result; the
// parent kills it at a chosen point.
func groupCrashChild() {
	root, jpath := os.Getenv("AGENTOS_CRASH_ROOT"), os.Getenv("AGENTOS_CRASH_JOURNAL")
	var paid atomic.Int64
	ex, err := groupCrashExecutor(root, &paid)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	j, err := journal.Open(jpath, journal.Options{Durability: journal.GroupCommit})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	for i := 0; ; i++ {
		res, id, err := executor.Record(context.Background(), ex, j, executor.Request{Path: "tools/short.ts", Args: json.RawMessage(fmt.Sprintf(`{"i": %d}`, i))})
		if err != nil || !res.Success {
			fmt.Println("error", err, res.Error)
			os.Exit(3)
		}
		fmt.Println("ended", i, id)
	}
}

func groupCrashExecutor(root string, paid *atomic.Int64) (*executor.Executor, error) {
	return executor.New(executor.Options{
		Root: root, Isolation: executor.IsolationProcess, Workers: 1,
		Seed:  func() uint64 { return 42 },
		Clock: func() time.Time { return time.UnixMilli(1_780_000_000_000) },
		Devices: map[string]driver.Device{"paid": driver.DeviceFunc(func(_ context.Context, _ string, req json.RawMessage) (json.RawMessage, error) {
			paid.Add(1)
			var a struct{ Item string }
			json.Unmarshal(req, &a)
			return json.Marshal("answer to " + a.Item)
		})},
		Bindings: []executor.Binding{{Name: "paid", Driver: "paid", Op: "ask", Params: []string{"item"}}},
	})
}

// TestGroupCommitCrashAndRecover kills a process recording short runs under
// GroupCommit, whose Begin and End are queued for the next group commit
// instead of committed before they return, and checks what the real
// journal file holds against what the package documentation promises: the
// file is consistent; one queue committed in order, each batch atomically,
// means the runs in the file are a prefix of the runs begun, all ended but
// possibly the last few, whose end (or whose begin and all) the crash lost;
// a run never has calls without its start; and recovery resumes every run
// left running, answering its recorded calls from the journal and paying
// only for the missing ones, to the result an uninterrupted run gives.
func TestGroupCommitCrashAndRecover(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash test starts and kills child processes")
	}
	root := t.TempDir()
	if _, err := host.Init(root, host.InitOptions{NoGit: true}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "tools", "short.ts"), []byte(shortTool), 0o644)
	var paid atomic.Int64
	ex, err := groupCrashExecutor(root, &paid)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	want := func(i int) string {
		res := ex.Exec(context.Background(), executor.Request{Path: "tools/short.ts", Args: json.RawMessage(fmt.Sprintf(`{"i": %d}`, i))})
		if !res.Success {
			t.Fatal(res.Error)
		}
		return string(res.Result)
	}

	// The kill points, after 1 to 40 acknowledged runs, are fixed and
	// spread over that range (a failure names one that reproduces).
	lostEnds := 0
	for trial := range 8 {
		killAfter := 1 + trial*39/7
		t.Run(fmt.Sprintf("kill-after-%d-runs", killAfter), func(t *testing.T) {
			jpath := filepath.Join(t.TempDir(), fmt.Sprintf("journal-%d.db", trial))
			ended := groupRunAndKill(t, root, jpath, killAfter)

			j, err := journal.Open(jpath, journal.Options{Durability: journal.GroupCommit})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			if err := j.Check(); err != nil {
				t.Fatalf("after SIGKILL: %v", err)
			}
			runs, err := j.Runs()
			if err != nil {
				t.Fatal(err)
			}
			// A prefix of the runs begun: run k is in the file only if
			// every run before it is, and ended.
			for k, m := range runs {
				var a struct{ I int }
				if err := json.Unmarshal(m.Args, &a); err != nil || a.I != k {
					t.Fatalf("run %d in the file is %s (args %s): the runs in the file are not a prefix of the runs begun", k, m.ID, m.Args)
				}
				if k < len(ended) && ended[k] != m.ID {
					t.Fatalf("run %d is %s in the file, the child reported %s", k, m.ID, ended[k])
				}
				if m.Status == journal.StatusRunning && k < len(runs)-1 {
					t.Fatalf("run %d of %d is still running: runs are sequential, so only the last run in the file can have lost its end", k, len(runs))
				}
				if m.Status != journal.StatusOK && m.Status != journal.StatusRunning {
					t.Fatalf("run %d: status %s", k, m.Status)
				}
			}
			if len(runs) < len(ended)-2 {
				t.Logf("%d runs ended in the child, %d are in the file", len(ended), len(runs))
			}
			// A run's calls are never in the file without its start: the
			// child's runs have ids of their own, and every id with calls
			// is a run listed above.
			for k, id := range ended {
				if k < len(runs) {
					continue
				}
				if n, err := j.Count(id); err != nil || n != 0 {
					t.Fatalf("run %s (#%d) is not in the file, yet %d of its calls are (%v)", id, k, n, err)
				}
			}
			var running []journal.RunMeta
			for _, m := range runs {
				if m.Status == journal.StatusRunning {
					running = append(running, m)
				}
			}
			recorded := 0
			wants := map[string]string{}
			for _, m := range running {
				es, err := j.Entries(m.ID)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range es {
					if e.Driver == "paid" {
						recorded++
					}
				}
				var a struct{ I int }
				json.Unmarshal(m.Args, &a)
				wants[m.ID] = want(a.I)
			}
			lostEnds += len(running)
			paid.Store(0)
			reports, err := executor.Recover(context.Background(), ex, j)
			if err != nil {
				t.Fatal(err)
			}
			if len(reports) != len(running) {
				t.Fatalf("recover: %d reports for %d running runs: %+v", len(reports), len(running), reports)
			}
			for _, r := range reports {
				if !r.Resumed || !r.Result.Success || string(r.Result.Result) != wants[r.Run.ID] {
					t.Fatalf("recovered run %s: %+v, uninterrupted %s", r.Run.ID, r, wants[r.Run.ID])
				}
			}
			if paid.Load() != int64(2*len(running)-recorded) {
				t.Fatalf("recovery paid %d calls; the %d resumed runs had %d of their %d recorded", paid.Load(), len(running), recorded, 2*len(running))
			}
			if left, _ := j.Unfinished(); len(left) != 0 {
				t.Fatalf("still unfinished after recovery: %+v", left)
			}
		})
	}
	t.Logf("ends lost by the crashes and resumed: %d", lostEnds)
}

// groupRunAndKill starts groupCrashChild, SIGKILLs it once it reported
// killAfter ended runs, and returns the ids of the runs it reported ended.
func groupRunAndKill(t *testing.T, root, jpath string, killAfter int) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AGENTOS_GC_CRASH_CHILD=1", "AGENTOS_CRASH_ROOT="+root, "AGENTOS_CRASH_JOURNAL="+jpath)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var ended []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "ended" {
			ended = append(ended, f[2])
			if len(ended) >= killAfter {
				cmd.Process.Kill()
				break
			}
		}
		if len(f) > 0 && f[0] == "error" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child: %s", sc.Text())
		}
	}
	cmd.Wait()
	return ended
}
