package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/journal"
)

// The host-death child: the test binary re-executed with hostDeathEnv set to
// a mode, on the tool root hostDeathRootEnv. Like the forge crash child it is
// entered from init, before the test framework.
const (
	hostDeathEnv     = "AGENTOS_HOST_DEATH_CHILD"
	hostDeathRootEnv = "AGENTOS_HOST_DEATH_ROOT"
)

func init() {
	mode := os.Getenv(hostDeathEnv)
	if mode == "" {
		return
	}
	executor.WorkerMain() // a sandbox worker never runs the child body
	os.Exit(hostDeathChild(mode, os.Getenv(hostDeathRootEnv)))
}

// hostDeathChild runs one mode and returns the exit status:
//
//	call-inprocess  a runtime in in-process isolation calls exec_tool on
//	                tools/poison.ts (until the parent kills it)
//	call-process    the same in process isolation, on tools/tmp.ts
//	start           a runtime in in-process isolation starts, prints
//	                Recovered() as JSON, and closes
//	hold            two recorded runs of tools/hold.ts in worker processes,
//	                each parked in a device (until the parent kills it)
func hostDeathChild(mode, root string) int {
	quiet := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	switch mode {
	case "call-inprocess", "call-process", "start":
		iso, tool := "inprocess", "tools/poison.ts"
		if mode == "call-process" {
			iso, tool = "process", "tools/tmp.ts"
		}
		rt, err := host.Start(ctx, host.Config{Root: root, Isolation: iso, Logger: quiet, Limits: host.LimitsConfig{Timeout: host.Duration(2 * time.Minute)}})
		if err != nil {
			fmt.Println("error:", err)
			return 3
		}
		if mode == "start" {
			out, _ := json.Marshal(rt.Recovered())
			fmt.Println(string(out))
			if err := rt.Close(); err != nil {
				fmt.Println("error:", err)
				return 3
			}
			return 0
		}
		if mode == "call-process" {
			go reportWrites(rt.Journal(), 4) // the parent kills the child once they are committed
		}
		out, err := rt.Call(ctx, "exec_tool", json.RawMessage(`{"path":"`+tool+`"}`))
		fmt.Println("error: the run ended instead of being killed:", string(out), err)
		return 3
	case "hold":
		ex, j, err := holdExecutor(root, func(context.Context) error {
			fmt.Println("holding")
			select {} // until SIGKILL
		})
		if err != nil {
			fmt.Println("error:", err)
			return 3
		}
		defer ex.Close()
		defer j.Close()
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { _, _, _ = executor.Record(ctx, ex, j, executor.Request{Path: "tools/hold.ts"}) })
		}
		wg.Wait()
		fmt.Println("error: the runs ended instead of being killed")
		return 3
	}
	fmt.Println("error: unknown mode", mode)
	return 3
}

// reportWrites prints "recorded" once the journal's one unfinished run
// holds n committed write_file calls: what the parent waits for before it
// kills the child (a read of the journal sees committed entries only).
func reportWrites(j *journal.Journal, n int) {
	for {
		if runs, err := j.Unfinished(); err == nil && len(runs) == 1 {
			entries, _ := j.Entries(runs[0].ID)
			writes := 0
			for _, e := range entries {
				if e.Op == "write_file" {
					writes++
				}
			}
			if writes >= n {
				fmt.Println("recorded")
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// holdExecutor is a worker-mode executor (two workers) whose tools have
// tgp.hold(), answered by hold, and the root's journal.
func holdExecutor(root string, hold func(context.Context) error) (*executor.Executor, *journal.Journal, error) {
	ex, err := executor.New(executor.Options{
		Root: root, Isolation: executor.IsolationProcess, Workers: 2, Logger: slog.New(slog.DiscardHandler),
		Limits: executor.Limits{Timeout: 2 * time.Minute},
		Devices: map[string]driver.Device{"hold": driver.DeviceFunc(func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
			if err := hold(ctx); err != nil {
				return nil, err
			}
			return json.RawMessage(`"released"`), nil
		})},
		Bindings: []executor.Binding{{Name: "hold", Driver: "hold", Op: "wait"}},
	})
	if err != nil {
		return nil, nil, err
	}
	jpath := filepath.Join(root, host.JournalFile)
	if err := os.MkdirAll(filepath.Dir(jpath), 0o700); err != nil {
		ex.Close()
		return nil, nil, err
	}
	j, err := journal.Open(jpath, journal.Options{Durability: journal.SyncEach})
	if err != nil {
		ex.Close()
		return nil, nil, err
	}
	return ex, j, nil
}

// startHostDeathChild starts the child in mode on root, with its own
// TMPDIR, and returns it with its output so far.
func startHostDeathChild(t *testing.T, mode, root, tmp string) (*exec.Cmd, *lockedOutput) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), hostDeathEnv+"="+mode, hostDeathRootEnv+"="+root, "TMPDIR="+tmp)
	out := &lockedOutput{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, out
}

// waitForOutput waits until the child printed line (60 s at most).
func waitForOutput(t *testing.T, out *lockedOutput, line string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(out.String(), line) {
		if strings.Contains(out.String(), "error") || time.Now().After(deadline) {
			t.Fatalf("the child never printed %q; it said:\n%s", line, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitForFile waits until a file matching pattern exists and returns it.
func waitForFile(t *testing.T, pattern string, out *lockedOutput) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			return m[0]
		}
		if strings.Contains(out.String(), "error") || time.Now().After(deadline) {
			t.Fatalf("%s never appeared; the child said:\n%s", pattern, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type lockedOutput struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedOutput) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedOutput) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// poisonTool spins in-process until tools/go.txt exists, then parses JSON
// nested five million deep: before issue 10 that overflowed Go's stack,
// which is fatal, so every start that resumed the run in-process died with
// it, for ever.
const poisonTool = `/** Waits for tools/go.txt, then parses a JSON bomb. */
export default async function (): Promise<number> {
  await tgp.write_file('/tmp/started', 'yes');
  while (!(await tgp.list_files('tools')).includes('tools/go.txt')) {}
  return JSON.parse('['.repeat(5e6) + ']'.repeat(5e6)).length;
}
`

// Issue 10, item 6: a host dies while a tool runs in-process (here a
// SIGKILL; in the attack, the tool's own JSON.parse bomb). The next start
// does not run the tool again in-process: it quarantines the run with the
// reason, and keeps reporting it; resuming it in-process is refused; resumed
// in process isolation, it runs to a clean, classified failure.
func TestHostDeathInProcessQuarantinesTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills child processes")
	}
	root := t.TempDir()
	if _, err := host.Init(root, host.InitOptions{NoGit: true}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "tools", "poison.ts"), []byte(poisonTool), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cmd, out := startHostDeathChild(t, "call-inprocess", root, tmp)
	waitForFile(t, filepath.Join(tmp, "agentos-run-*", "started"), out)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()

	// The poison is now armed: a start that resumed the run in-process
	// would run the bomb in its own process.
	if err := os.WriteFile(filepath.Join(root, "tools", "go.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var runID string
	for i := range 2 { // the first start quarantines it, the next ones report it
		start, sout := startHostDeathChild(t, "start", root, t.TempDir())
		if err := start.Wait(); err != nil {
			t.Fatalf("start %d died (%v):\n%s", i+1, err, sout.String())
		}
		var reports []executor.RecoverReport
		if err := json.Unmarshal([]byte(strings.TrimSpace(sout.String())), &reports); err != nil {
			t.Fatalf("start %d printed %q: %v", i+1, sout.String(), err)
		}
		if len(reports) != 1 || !reports[0].Quarantined || reports[0].Resumed || reports[0].Run.Tool != "tools/poison.ts" ||
			!strings.Contains(reports[0].Reason, "died while the run was executing in-process") || !strings.Contains(reports[0].Reason, "agentos recover --run "+reports[0].Run.ID) {
			t.Fatalf("start %d recovered %+v, want the run quarantined with the reason", i+1, reports)
		}
		runID = reports[0].Run.ID
	}

	j, err := journal.Open(filepath.Join(root, host.JournalFile), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	meta, err := j.Get(runID)
	if err != nil || meta.Status != journal.StatusQuarantined || meta.Isolation != "inprocess" || meta.PID != cmd.Process.Pid || meta.Quarantine == "" {
		t.Fatalf("journaled run: %+v %v", meta, err)
	}
	// Never in-process again, even on request.
	inproc, err := executor.New(executor.Options{Root: root, Isolation: executor.IsolationInProcess, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer inproc.Close()
	if _, err := executor.RecoverRun(context.Background(), inproc, j, runID); !errors.Is(err, executor.ErrQuarantined) {
		t.Fatalf("RecoverRun in-process: %v, want ErrQuarantined", err)
	}
	// In a worker: a classified failure, and the run ends.
	worker, err := executor.New(executor.Options{Root: root, Isolation: executor.IsolationProcess, Workers: 1, Logger: slog.New(slog.DiscardHandler), Limits: executor.Limits{Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	rep, err := executor.RecoverRun(context.Background(), worker, j, runID[:12])
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Resumed || rep.Result.Success || rep.Result.Error.Kind != executor.ErrException.Kind || !strings.Contains(rep.Result.Error.Message, "JSON.parse") {
		t.Fatalf("resumed in a worker: %+v %+v", rep, rep.Result.Error)
	}
	if meta, _ = j.Get(runID); meta.Status != journal.StatusFailed || meta.Isolation != "process" || meta.Quarantine == "" {
		t.Fatalf("after the resume: %+v", meta)
	}
	if _, err := executor.RecoverRun(context.Background(), worker, j, runID); !errors.Is(err, executor.ErrNotResumable) {
		t.Fatalf("resuming an ended run: %v", err)
	}
}

// tmpTool writes to /tmp, waits for tools/go.txt, and reads /tmp back.
const tmpTool = `/** Writes /tmp, waits for tools/go.txt, reads /tmp back. */
export default async function (): Promise<string[]> {
  await tgp.write_file('/tmp/x', 'written before the crash');
  await tgp.write_file('/tmp/d/y', 'nested');
  await tgp.write_file('/tmp/x', 'overwritten before the crash');
  await tgp.write_file('/tmp/started', 'yes');
  while (!(await tgp.list_files('tools')).includes('tools/go.txt')) {}
  return [await tgp.read_file('/tmp/x'), await tgp.read_file('/tmp/d/y'), (await tgp.list_files('/tmp')).sort().join(',')];
}
`

// Issue 10, item 11: a resumed run got an empty /tmp, so a run that read
// back a file it wrote before the crash failed. The writes of the recorded
// prefix are performed again: /tmp is as it was at the crash. The SIGKILLed
// run's scratch directory itself is removed by the next start (item 13).
func TestResumedRunGetsItsTmpBack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills child processes")
	}
	root := t.TempDir()
	if _, err := host.Init(root, host.InitOptions{NoGit: true}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "tools", "tmp.ts"), []byte(tmpTool), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cmd, out := startHostDeathChild(t, "call-process", root, tmp)
	started := waitForFile(t, filepath.Join(tmp, "agentos-run-*", "started"), out)
	waitForOutput(t, out, "recorded") // the child saw the four writes committed to its journal
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	killed := time.Now()

	j, err := journal.Open(filepath.Join(root, host.JournalFile), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runs, err := j.Unfinished()
	if err != nil || len(runs) != 1 {
		t.Fatalf("unfinished: %+v %v", runs, err)
	}
	entries, _ := j.Entries(runs[0].ID)
	writes := 0
	for _, e := range entries {
		if e.Op == "write_file" {
			writes++
		}
	}
	j.Close()
	if writes != 4 {
		t.Fatalf("the journal holds %d of the 4 writes made before the kill; this test needs them recorded", writes)
	}
	if runs[0].Isolation != "process" || runs[0].Interrupted != "" {
		t.Fatalf("run meta: %+v", runs[0])
	}

	if err := os.WriteFile(filepath.Join(root, "tools", "go.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The next start runs in the same TMPDIR, a while after the kill.
	time.Sleep(time.Until(killed.Add(3 * time.Second)))
	t.Setenv("TMPDIR", tmp)
	rt, err := host.Start(context.Background(), host.Config{Root: root, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	rec := rt.Recovered()
	if len(rec) != 1 || !rec[0].Resumed {
		t.Fatalf("recovered: %+v", rec)
	}
	if want := `["overwritten before the crash","nested","/tmp/d/y,/tmp/started,/tmp/x"]`; !rec[0].Result.Success || string(rec[0].Result.Result) != want {
		t.Fatalf("resumed run: %s %+v, want %s", rec[0].Result.Result, rec[0].Result.Error, want)
	}
	if _, err := os.Stat(filepath.Dir(started)); !os.IsNotExist(err) {
		t.Fatalf("the killed run's scratch directory %s is still there: %v", filepath.Dir(started), err)
	}
}

// Issue 10, item 13: a start that recovered six interrupted bomb runs took
// 32 s: runs were resumed one after the other, each until its timeout.
// They are resumed concurrently: two runs whose tools each wait for the
// other both finish (one after the other, each would wait for ever).
func TestRecoveryResumesRunsConcurrently(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills child processes")
	}
	root := t.TempDir()
	if _, err := host.Init(root, host.InitOptions{NoGit: true}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "tools", "hold.ts"), []byte("export default async () => await tgp.hold();\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, out := startHostDeathChild(t, "hold", root, t.TempDir())
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(out.String(), "holding") < 2 {
		if strings.Contains(out.String(), "error") || time.Now().After(deadline) {
			t.Fatalf("the child's runs never both started:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()

	// A barrier: each held call returns once both are held.
	var mu sync.Mutex
	held := 0
	both := make(chan struct{})
	ex, j, err := holdExecutor(root, func(ctx context.Context) error {
		mu.Lock()
		if held++; held == 2 {
			close(both)
		}
		mu.Unlock()
		select {
		case <-both:
			return nil
		case <-time.After(30 * time.Second):
			return errors.New("the other run never came: runs are resumed one at a time")
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	defer j.Close()
	reports, err := executor.Recover(context.Background(), ex, j)
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 2 {
		t.Fatalf("reports: %+v", reports)
	}
	for _, r := range reports {
		if !r.Resumed || string(r.Result.Result) != `"released"` {
			t.Fatalf("run %s: %s %+v", r.Run.ID, r.Result.Result, r.Result.Error)
		}
	}
}
