package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/journal"
)

// The forge crash child: the test binary re-executed with
// forgeCrashChildEnv=1 starts a runtime on forgeCrashRootEnv whose model is
// the parent's scripted server at forgeCrashURLEnv, and forges fib.ts until
// the parent SIGKILLs it.
//
// The child mode is entered from init, not from TestMain (crash_test.go owns
// TestMain and its own child mode): an init runs before TestMain, so the
// child never reaches the test framework.
const (
	forgeCrashChildEnv = "AGENTOS_FORGE_CRASH_CHILD"
	forgeCrashRootEnv  = "AGENTOS_FORGE_CRASH_ROOT"
	forgeCrashURLEnv   = "AGENTOS_FORGE_CRASH_URL"

	forgeCrashSpec = "a tool that returns the n-th Fibonacci number"
	forgeCrashPath = "tools/math/fib.ts"

	// forgeCrashReady is the line the child prints, followed by the forge's
	// run id, once attempt 1 is judged and journaled and the child is
	// parked before its second model request.
	forgeCrashReady = "forge-crash: ready"
	// forgeCrashFailed prefixes the line the child prints when it cannot
	// reach that point.
	forgeCrashFailed = "forge-crash: error"
)

func init() {
	if os.Getenv(forgeCrashChildEnv) != "1" {
		return
	}
	executor.WorkerMain() // a sandbox worker never runs the child body
	os.Exit(forgeCrashChild())
}

var (
	forgeCrashFib   = samples.FibForged
	forgeCrashBuggy = samples.FibForgedBuggy
	forgeCrashTests = samples.FibForgedTests
)

func forgeCrashSubmit(code string) llmtest.Step {
	args, _ := json.Marshal(map[string]string{"path": forgeCrashPath, "code": code, "tests": forgeCrashTests})
	return llmtest.Step{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "submit_tool", Arguments: string(args)}}}
}

// forgeCrashParker is the child's log handler. It writes every record to
// the wrapped handler (stderr) and, when the forge logs "forge: attempt"
// with n=1, parks the forge goroutine for good.
//
// Why this is deterministic: the forge logs "forge: attempt" synchronously
// in its loop, after attempt 1's lessons, model answer, path check and test
// run (seqs 1-4) went through the journal middleware and before it asks the
// model again. A handler that never returns therefore holds the forge
// exactly between request 1 and request 2, whatever the scheduling: the
// parent does not race the child. The model's answer is committed, with
// the lessons before it, before the forge uses it; the path check and the
// test run are held until the next answer (journal.Run.DurableFor), so the
// kill loses them and the resumed forge performs them again. park waits
// until the first two are committed (read back from the child's own
// journal) before it tells the parent it is ready.
type forgeCrashParker struct {
	slog.Handler
	rt     *atomic.Pointer[host.Runtime]
	parked *atomic.Bool
}

func (h forgeCrashParker) WithAttrs(as []slog.Attr) slog.Handler {
	return forgeCrashParker{Handler: h.Handler.WithAttrs(as), rt: h.rt, parked: h.parked}
}

func (h forgeCrashParker) WithGroup(name string) slog.Handler {
	return forgeCrashParker{Handler: h.Handler.WithGroup(name), rt: h.rt, parked: h.parked}
}

func (h forgeCrashParker) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Message != "forge: attempt" {
		return err
	}
	n := int64(0)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "n" {
			n = a.Value.Int64()
			return false
		}
		return true
	})
	if n == 1 && h.parked.CompareAndSwap(false, true) {
		h.park()
	}
	return err
}

// park waits for attempt 1's entries to be committed, says so on stdout,
// and blocks until the parent kills the process.
func (h forgeCrashParker) park() {
	deadline := time.Now().Add(time.Minute)
	for {
		id, entries, err := forgeCrashJournaled(h.rt.Load())
		switch {
		case err != nil:
			fmt.Println(forgeCrashFailed, err)
			os.Exit(3)
		case len(entries) >= 2:
			fmt.Println(forgeCrashReady, id)
			// The parent SIGKILLs the child now. Should it never do so (the
			// parent died), the child does not outlive it by much.
			time.Sleep(5 * time.Minute)
			fmt.Println(forgeCrashFailed, "never killed")
			os.Exit(4)
		case time.Now().After(deadline):
			fmt.Println(forgeCrashFailed, "attempt 1 was not journaled after a minute:", len(entries), "entries")
			os.Exit(3)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// forgeCrashJournaled returns the one unfinished forge run and its entries.
func forgeCrashJournaled(rt *host.Runtime) (string, []journal.Entry, error) {
	if rt == nil {
		return "", nil, errors.New("the forge ran before Start returned")
	}
	runs, err := rt.Journal().Unfinished()
	if err != nil {
		return "", nil, err
	}
	var forges []journal.RunMeta
	for _, r := range runs {
		if r.Kind == forge.Kind {
			forges = append(forges, r)
		}
	}
	if len(forges) != 1 {
		return "", nil, fmt.Errorf("%d unfinished forge runs, want 1", len(forges))
	}
	entries, err := rt.Journal().Entries(forges[0].ID)
	return forges[0].ID, entries, err
}

// forgeCrashChild is the child's body; it returns the exit code (it
// returns only when the forge ended, which is a failure: it must be killed
// while parked).
func forgeCrashChild() int {
	var rtp atomic.Pointer[host.Runtime]
	var parked atomic.Bool
	log := slog.New(forgeCrashParker{Handler: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}), rt: &rtp, parked: &parked})
	rt, err := host.Start(context.Background(), host.Config{
		Root: os.Getenv(forgeCrashRootEnv), Isolation: "inprocess", Logger: log,
		LLM: host.LLMConfig{BaseURL: os.Getenv(forgeCrashURLEnv), Model: "scripted"},
	})
	if err != nil {
		fmt.Println(forgeCrashFailed, "start:", err)
		return 3
	}
	rtp.Store(rt)
	args, _ := json.Marshal(map[string]string{"spec": forgeCrashSpec})
	out, err := rt.Call(context.Background(), "forge_tool", args)
	fmt.Println(forgeCrashFailed, "the forge was not parked; it ended with", string(out), err)
	rt.Close()
	return 3
}

// Kill the process mid-forge (SIGKILL) and start it again: the forge
// resumes in recover mode, the recorded LLM answers are replayed, and the
// scripted server proves that no LLM request was sent twice.
//
// The child is killed between its first model answer (buggy fib, whose
// tests failed) and its second model request: see
// forgeCrashParker for how that point is reached without a race. The
// scripted server has exactly two steps and outlives the child: the
// resumed forge must replay answer 1 from the journal and ask only for
// answer 2; a third request would exhaust the script and show in Err.
func TestForgeKilledResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("the forge crash test starts and kills a child process")
	}
	root := t.TempDir()
	if _, err := host.Init(root, host.InitOptions{NoGit: true}); err != nil {
		t.Fatal(err)
	}
	fixed := forgeCrashSubmit(forgeCrashFib)
	fixed.Check = func(r llmtest.Received) error {
		// The resumed conversation is the crashed one: answer 1 (replayed)
		// and its test failure (the same tests run again: the kill lost the
		// held run) lead to request 2.
		last := r.Messages[len(r.Messages)-1]
		if last.Role != "tool" || !strings.Contains(last.Content, "fib(0) = 1, want 0") {
			return fmt.Errorf("request 2 does not carry attempt 1's test failure: %+v", last)
		}
		return nil
	}
	srv := llmtest.NewServer([]llmtest.Step{forgeCrashSubmit(forgeCrashBuggy), fixed})
	defer srv.Close()

	runID := forgeCrashRunAndKill(t, root, srv)
	if got := srv.Requests(); got != 1 {
		t.Fatalf("the server received %d requests before the kill, want 1", got)
	}

	// Issue 25 item 9: a start that was not asked to resume forges (an
	// 'agentos agent', 'call', 'forge') leaves the forge interrupted and
	// sends the model nothing.
	cfg := host.Config{
		Root: root, Isolation: "inprocess", Logger: quiet,
		LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"},
	}
	rt, err := host.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, reps := rt.ResumingForges(), rt.ResumedForges(); len(got) != 0 || len(reps) != 0 {
		t.Fatalf("a start without ResumeForges resumed forges: %v %+v", got, reps)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests(); got != 1 {
		t.Fatalf("a start without ResumeForges sent the model %d requests, want none", got-1)
	}

	// Start again on the same root, in this process, asked to resume.
	cfg.ResumeForges = true
	rt, err = host.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if got := rt.ResumingForges(); len(got) != 1 || got[0] != runID {
		t.Fatalf("ResumingForges: %v, want [%s]", got, runID)
	}
	reports := rt.ResumedForges()
	if len(reports) != 1 {
		t.Fatalf("resumed forges: %+v, want 1", reports)
	}
	rep := reports[0]
	res := rep.Result
	if rep.Err != "" || rep.Run != runID || res.RunID != runID {
		t.Fatalf("resumed forge %s (want %s): %+v", rep.Run, runID, rep)
	}
	if res.Reused || res.Path != forgeCrashPath || len(res.Attempts) != 2 || res.Attempts[0].Passed || !res.Attempts[1].Passed {
		t.Fatalf("resumed forge result: %+v", res)
	}
	if b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(forgeCrashPath))); err != nil || string(b) != forgeCrashFib {
		t.Fatalf("the forged tool on disk: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "tools", "math", "fib.test.ts")); err != nil || string(b) != forgeCrashTests {
		t.Fatalf("the forged tool's tests on disk: %q %v", b, err)
	}
	if _, ok := rt.Registry().Get(forgeCrashPath); !ok {
		t.Fatal("the forged tool is not registered")
	}

	// No request was sent twice: answer 1 came from the journal.
	if got := srv.Requests(); got != 2 {
		t.Fatalf("the server received %d requests in all, want 2 (answer 1 replayed, not asked again)", got)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	// The run ended, with every call recorded once.
	meta, err := rt.Journal().Get(runID)
	if err != nil || meta.Status != journal.StatusOK {
		t.Fatalf("the forge run after resuming: %+v %v", meta, err)
	}
	entries, err := rt.Journal().Entries(runID)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, e := range entries {
		calls = append(calls, fmt.Sprintf("%d:%s.%s", e.Seq, e.Driver, e.Op))
	}
	// The lessons about the spec (memory.recall_lessons) are its first
	// call, answered from the journal on resume like the others.
	if got, want := strings.Join(calls, " "), "1:memory.lessons 2:llm.complete 3:forge.taken 4:forge.run 5:llm.complete 6:forge.taken 7:forge.run"; got != want {
		t.Fatalf("journaled calls: %s, want %s", got, want)
	}
	if runs, err := rt.Journal().Unfinished(); err != nil || len(runs) != 0 {
		t.Fatalf("unfinished runs after resuming: %+v %v", runs, err)
	}
}

// forgeCrashRunAndKill runs the child until it is parked after attempt 1,
// SIGKILLs it and returns the forge's run id.
func forgeCrashRunAndKill(t *testing.T, root string, srv *llmtest.Server) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), forgeCrashChildEnv+"=1", forgeCrashRootEnv+"="+root, forgeCrashURLEnv+"="+srv.URL())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var waitErr error
	lines := make(chan string, 64)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	// killAndWait is idempotent: the test kills the child at the chosen
	// point, and the cleanup kills it whatever happened before.
	killAndWait := func() error {
		once.Do(func() {
			_ = cmd.Process.Kill() // SIGKILL
			// Drain stdout so the reader ends, then reap the child.
			go func() {
				for range lines {
				}
			}()
			<-readerDone
			waitErr = cmd.Wait()
		})
		return waitErr
	}
	t.Cleanup(func() { killAndWait() })

	var runID string
	timeout := time.NewTimer(3 * time.Minute)
	defer timeout.Stop()
wait:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				killAndWait()
				t.Fatalf("the child exited before it was ready: %v\nstderr:\n%s", waitErr, stderr.String())
			}
			switch {
			case strings.HasPrefix(line, forgeCrashReady+" "):
				runID = strings.TrimPrefix(line, forgeCrashReady+" ")
				break wait
			case strings.HasPrefix(line, forgeCrashFailed):
				killAndWait()
				t.Fatalf("child: %s\nstderr:\n%s", line, stderr.String())
			}
		case <-timeout.C:
			killAndWait()
			t.Fatalf("the child was not ready after 3 minutes (server requests: %d)\nstderr:\n%s", srv.Requests(), stderr.String())
		}
	}
	// The child is parked between request 1 and request 2 and cannot
	// leave that point: the request count is exact.
	if got := srv.Requests(); got != 1 {
		killAndWait()
		t.Fatalf("the child is parked after attempt 1 but the server received %d requests, want 1", got)
	}
	err = killAndWait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the child was not killed: %v\nstderr:\n%s", err, stderr.String())
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child ended with %v, want killed by SIGKILL\nstderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "forge: attempt") {
		t.Fatalf("the child's log lacks attempt 1:\n%s", stderr.String())
	}
	t.Logf("child killed while parked after attempt 1 of forge run %s; its log:\n%s", runID, stderr.String())
	return runID
}
