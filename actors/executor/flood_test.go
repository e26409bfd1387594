package executor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/executor/internal/confine"
	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
	"github.com/agentos-run/agentos/actors/executor/internal/workerside"
	"github.com/agentos-run/agentos/driver"
)

// parentRSS returns this process's resident memory in bytes (VmRSS).
func parentRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status to measure the parent's memory: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// Issue 25, item 7: a worker limited to 256 MB that floods its parent with
// large driver calls, none awaited, made the parent hold 778 MB: every call
// frame was read whole and handed to its own goroutine (up to
// sandbox.MaxInFlight of them), each decoding its request into more copies.
// The parent now reads a worker's frames only while the bytes it holds of
// them stay under maxHeldBytes (one frame up to maxFrame always goes
// through), so its memory stays near that bound whatever the tool does.
//
// The driver here is slower than the worker (a disk, a database, the git
// actor): it holds each call until more than maxHeldBytes of requests wait
// in it, or a second passed. Without the bound the worker's next
// frames keep arriving and the calls pile up; with it, they cannot.
func TestWorkerFloodingWritesDoesNotGrowTheParent(t *testing.T) {
	const flood = "export default async () => { const s = 'x'.repeat(8 << 20); const ps = []; for (let i = 0; i < 8; i++) ps.push(tgp.write_file('/tmp/f' + (i % 4), s)); await Promise.all(ps); return 'flooded'; };\n"
	e := newExec(t, IsolationProcess, map[string]string{"tools/flood.ts": flood}, func(o *Options) { o.Workers = 1; o.Limits.MemoryBytes = 256 << 20 })
	var (
		mu             sync.Mutex
		waiting, peakB int
		more           = make(chan struct{})
	)
	slow := func(next driver.Host) driver.Host {
		return driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
			mu.Lock()
			waiting += len(c.Request)
			peakB = max(peakB, waiting)
			if waiting > maxHeldBytes {
				close(more)
				more = make(chan struct{})
			}
			ch := more
			mu.Unlock()
			select {
			case <-ch:
			case <-time.After(time.Second):
			}
			mu.Lock()
			waiting -= len(c.Request)
			mu.Unlock()
			return next.Do(ctx, c)
		})
	}
	before := parentRSS(t)
	var peak int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, parentRSS(t))
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	r := e.Exec(context.Background(), Request{Path: "tools/flood.ts", Middleware: []driver.Middleware{slow}, Limits: Limits{Timeout: 120 * time.Second, MemoryBytes: 256 << 20}})
	close(stop)
	wg.Wait()
	grew := peak - before
	t.Logf("parent RSS %d MB before, peak %d MB (+%d MB); %d MB of requests held at once in the driver", before>>20, peak>>20, grew>>20, peakB>>20)
	wantResult(t, r, `"flooded"`)
	if peakB > maxHeldBytes {
		t.Fatalf("the parent held %d bytes of a worker's call requests at once; the bound is %d", peakB, maxHeldBytes)
	}
	// The race detector's shadow memory counts in RSS: under -race the
	// figure is logged, and the bound on held bytes above is the check.
	if grew > 150<<20 && !raceEnabled {
		t.Fatalf("the parent grew by %d MB while a 256 MB worker flooded it with writes", grew>>20)
	}
}

// A worker that announces a frame over maxFrame (one that escaped goja, or
// a broken one) is refused before the parent allocates anything of it: the
// run fails saying so, and the worker is killed.
func TestWorkerFrameOverTheLimitIsRefusedBeforeItIsRead(t *testing.T) {
	// A stand-in worker whose first frame announces 4 GB.
	e := newExec(t, IsolationProcess, map[string]string{"tools/ok.ts": "export default () => 1;\n"}, func(o *Options) {
		o.Workers = 1
		o.WorkerCommand = []string{"/bin/sh", "-c", `printf '\377\377\377\360'; exec sleep 60`}
	})
	before := parentRSS(t)
	r := run(t, e, "tools/ok.ts", `{}`)
	wantKind(t, r, "host_failure", fmt.Sprintf("announces 4294967280 bytes, over the %d-byte limit of one frame", maxFrame))
	if !strings.Contains(r.Error.Message, "its worker was killed") {
		t.Fatalf("the error does not say the worker was killed: %s", r.Error.Message)
	}
	if grew := parentRSS(t) - before; grew > 64<<20 {
		t.Fatalf("the parent grew by %d MB refusing the frame", grew>>20)
	}
}

// A program started as a worker that is no worker (an embedding program
// that forgot WorkerMain: its tests print PASS) is named as such, with
// what to do, not reported as an escape from the sandbox.
func TestWorkerThatIsNotAWorkerSaysWhatToDo(t *testing.T) {
	e := newExec(t, IsolationProcess, map[string]string{"tools/ok.ts": "export default () => 1;\n"}, func(o *Options) {
		o.Workers = 1
		o.WorkerCommand = []string{"/bin/sh", "-c", `echo PASS; exec sleep 60`}
	})
	r := run(t, e, "tools/ok.ts", `{}`)
	wantKind(t, r, "host_failure", `did not answer as one`)
	for _, want := range []string{`the text "PASS`, "MUST call executor.WorkerMain()", "its worker was killed"} {
		if !strings.Contains(r.Error.Message, want) {
			t.Fatalf("the error does not say %q: %s", want, r.Error.Message)
		}
	}
	if strings.Contains(r.Error.Message, "escape") {
		t.Fatalf("a program that is no worker is reported as an escape: %s", r.Error.Message)
	}
}

// rogueWorker is a worker that escaped goja (envTestRogue): it speaks the
// protocol but answers every run with an outcome over the run's output
// limit, the whole of it in the result or in log lines of 1 KiB.
func rogueWorker(how string) {
	out, in := os.Stdout, bufio.NewReader(os.Stdin)
	send := func(f *workerside.Frame) {
		if err := workerside.WriteFrame(out, f); err != nil {
			os.Exit(1)
		}
	}
	send(&workerside.Frame{T: "hello", Prot: &confine.Report{}, Build: workerside.BuildID().ID})
	for {
		f, err := workerside.ReadFrame(in)
		if err != nil {
			os.Exit(0)
		}
		if f.T != "run" || f.Job == nil {
			continue
		}
		size := f.Job.Limits.WithDefaults().MaxOutputBytes + outcomeSlack + 1
		o := sandbox.Outcome{Result: json.RawMessage(`"` + strings.Repeat("x", size) + `"`), Logs: []string{}}
		if how == "logs" {
			line := strings.Repeat("y", 1<<10)
			o = sandbox.Outcome{Result: json.RawMessage("1")}
			for n := 0; n < size; n += len(line) {
				o.Logs = append(o.Logs, line)
			}
		}
		send(&workerside.Frame{T: "done", ID: f.ID, Out: &o})
	}
}

// A worker enforces its run's output limit; the parent checks that it
// did. A worker that escaped goja and returns more (up to a frame's 64 MiB)
// fails its run as one that broke the protocol, and is killed, instead of
// handing the host, the journal and the caller what it made up.
func TestWorkerOutcomeOverTheOutputLimitIsRefused(t *testing.T) {
	for _, how := range []string{"result", "logs"} {
		t.Run(how, func(t *testing.T) {
			t.Setenv(envTestRogue, how)
			e := newExec(t, IsolationProcess, map[string]string{"tools/ok.ts": "export default () => 1;\n"}, func(o *Options) { o.Workers = 1 })
			r := run(t, e, "tools/ok.ts", `{}`)
			wantKind(t, r, "host_failure", "over its run's 1048576-byte output limit, which the worker enforces")
			if !strings.Contains(r.Error.Message, "its worker was killed") || len(r.Result) > len("null") || len(r.Logs) > 0 {
				t.Fatalf("the refused outcome reached the caller, or the error does not say the worker was killed: %+v", r)
			}
		})
	}
}

// An honest worker's outcome at its limits passes the parent's check: logs
// up to the output limit, then a thrown error whose message and stack are
// as long as the worker keeps them.
func TestOutcomeAtTheOutputLimitPasses(t *testing.T) {
	const tool = "export default (a: { n: number }) => { const line = 'z'.repeat(1000); for (let i = 0; i < a.n; i++) console.log(line); throw new Error('m'.repeat(200000)); };\n"
	e := newExec(t, IsolationProcess, map[string]string{"tools/full.ts": tool}, func(o *Options) { o.Workers = 1 })
	r := run(t, e, "tools/full.ts", `{"n": 1048}`)
	wantKind(t, r, "exception", "mmmm")
	if len(r.Logs) != 1048 {
		t.Fatalf("the run kept %d of its 1048 log lines: %+v", len(r.Logs), r.Error)
	}
}

// roomyClock gives a run a minute: the tests that move megabytes are about
// the output limit, not time, and under -race on a loaded machine a worker
// took more than newExec's 2 s over a 2 MB key (CI, 2026-12-05).
func roomyClock(o *Options) { o.Limits.Timeout = time.Minute }

// A warning names a value's path, bounded however long its keys are: a
// result whose NaN sits under a 2 MB key is over the output limit (the
// tool's error, output_too_large) with a short warning, in a worker too
// (not an outcome the parent refuses as a broken protocol).
func TestHugeKeyInAWarningIsClipped(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{"tools/deep.ts": "export default () => ({ ['k'.repeat(2 << 20)]: NaN });\n"}, roomyClock)
		r := run(t, e, "tools/deep.ts", `{}`)
		if r.Error == nil || r.Error.Kind != "output_too_large" {
			t.Fatalf("a 2 MB key in the result: want output_too_large, got %+v", r.Error)
		}
		for _, l := range r.Logs {
			if len(l) > 4<<10 {
				t.Fatalf("a warning of %d bytes", len(l))
			}
		}
	})
}

// A run's error text is bounded whatever the tool makes of it: a toJSON
// that throws a 2 MB string is the tool's exception, its message clipped
// (in a worker: not an outcome the parent refuses as a broken protocol).
func TestHugeErrorTextIsClippedNotRefused(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{"tools/big.ts": "export default () => ({ toJSON() { throw 'x'.repeat(2 << 20); } });\n"}, roomyClock)
		r := run(t, e, "tools/big.ts", `{}`)
		wantKind(t, r, "exception", "the tool's result cannot be turned into JSON: xxxx")
		if n := len(r.Error.Message); n > 65<<10 {
			t.Fatalf("the error's message is %d bytes", n)
		}
	})
}
