package agentos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
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
	if path := os.Getenv("AGENTOS_DIAL_CHILD"); path != "" { // another user dialing the node socket
		dialChild(path)
	}
	if os.Getenv("AGENTOS_CRASH_CHILD") == "1" {
		crashChild()
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
// after call N is journaled; the parent kills it at a random point.
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
	if _, err := Init(root, InitOptions{NoGit: true}); err != nil {
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

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	const trials = 16
	for trial := range trials {
		killAfter := rng.IntN(int(totalCalls))
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
			reports, err := Recover(context.Background(), ex, j)
			if err != nil {
				t.Fatal(err)
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
