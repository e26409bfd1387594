package workerside

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentos-run/agentos/actors/executor/internal/confine"
	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
	driver "github.com/agentos-run/agentos/driver/driverbase"
)

// Environment of a worker process.
const (
	EnvWorker = "AGENTOS_SANDBOX_WORKER" // "1" in a worker
	EnvMemory = "AGENTOS_WORKER_MEMORY"  // the per-run memory limit in bytes
)

// envConfine is the worker's confine mode (see Options.Confine).
const EnvConfine = "AGENTOS_WORKER_CONFINE"

// exitConfine is the exit status of a worker that refused to start because
// the confinement its mode requires could not be applied.
const ExitConfine = 78

// addressSpaceHeadroom is added to the worker's address space at start plus
// twice the memory limit to make its RLIMIT_AS: the Go runtime reserves
// address space (heap arenas, their metadata, thread stacks) well beyond what
// it touches, and a limit that is too tight kills healthy runs.
const addressSpaceHeadroom = 1 << 30

// addressSpace returns this process's current virtual memory size in bytes.
func addressSpace() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmSize in /proc/self/status")
}

// IsWorker reports whether this process was started as a sandbox worker.
func IsWorker() bool { return os.Getenv(EnvWorker) == "1" }

// Options are what a worker program gives Main.
type Options struct {
	// Restrict applies Landlock to every thread; nil: confine's own,
	// which a program that links cgo cannot use (see confine.Restrictor).
	Restrict confine.Restrictor
	// Probe (nil but in tests) runs right after the worker is confined,
	// its result sent in a "probe" frame: it stands for code that escaped
	// goja.
	Probe func() json.RawMessage
}

// Main serves as a sandbox worker and exits if this process was started as
// one; otherwise it returns at once. IMPORTANT: a program MUST call it
// first thing in main, before it opens anything a tool must not reach.
func Main(opts Options) {
	if !IsWorker() {
		return
	}
	err := Serve(pollable(os.Stdin), os.Stdout, opts)
	if err != nil && err != io.EOF {
		fmt.Fprintln(os.Stderr, "agentos worker:", err)
		if errors.Is(err, ErrNotConfined) {
			os.Exit(ExitConfine)
		}
		os.Exit(1)
	}
	os.Exit(0)
}

// pollable returns f, a pipe, read through Go's poller: a goroutine that
// waits for the parent's next frame then parks in epoll, holding no thread
// in a blocking read (which kept the worker's sysmon polling, every 20 µs
// for a millisecond after each run and less often later, a wake-up each
// time). f itself if it cannot be polled.
func pollable(f *os.File) *os.File {
	fd := f.Fd()
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		return f
	}
	return os.NewFile(fd, f.Name())
}

// ErrNotConfined: the worker's mode requires a confinement the kernel could
// not apply.
var ErrNotConfined = errors.New("refusing to serve unconfined")

// Serve hardens the process, then runs jobs from r one at a time,
// answering on w, until r closes. Its first frame is a hello saying which
// protections are in force and which build this worker is (BuildID); a
// probe's result follows it (see Options).
func Serve(r io.Reader, w io.Writer, opts Options) error {
	time.Local = time.UTC // Date's local time zone is UTC in every tool
	mode, err := confine.ParseMode(os.Getenv(EnvConfine))
	if err != nil {
		return err
	}
	rlimit, err := limitAddressSpace()
	if err != nil {
		return err
	}
	// IMPORTANT: from here on the worker can open no file, socket or
	// process: everything it needs it already holds (its pipes).
	prot, err := confine.Apply(mode, opts.Restrict)
	prot.RlimitAS = rlimit
	if err != nil {
		return fmt.Errorf("%w: %v (confine mode %q; set it to %q to run without, or use a kernel with Landlock and seccomp)", ErrNotConfined, err, mode, confine.BestEffort)
	}
	c := &workerConn{out: w, waiting: map[uint64]*waiter{}}
	if err := c.send(&Frame{T: "hello", Prot: &prot, Build: BuildID().ID}); err != nil {
		return err
	}
	if opts.Probe != nil {
		if err := c.send(&Frame{T: "probe", Val: opts.Probe()}); err != nil {
			return err
		}
	}
	// The first runtime is prepared while the worker waits for its first
	// job: ready (hello) does not wait for it, the first run rarely does.
	engine := sandbox.NewEngine(0, false)
	engine.PrewarmAfterRuns() // each next runtime is prepared once a run's outcome is sent
	engine.Prewarm()
	sv := &serving{c: c, in: bufio.NewReaderSize(r, 64<<10), engine: engine, turn: make(chan struct{}, 1), quit: make(chan struct{})}
	sv.turn <- struct{}{} // the first loop to start reads first
	go sv.loop()
	go sv.loop()
	<-sv.quit
	sv.runMu.Lock() // a run in progress ends first, its outcome sent (or not)
	defer sv.runMu.Unlock()
	return sv.err
}

// serving is a worker's two serving goroutines. They take turns reading
// the parent's frames (turn): the one that reads a run frame hands the
// reading to the other and runs the job itself, so that a run starts
// where its frame was read, without a hand-over to another goroutine (a
// wake-up of another thread, measured at 37-41 µs a run); the other reads
// the run's replies and stop meanwhile. runMu keeps runs one at a time,
// as the parent sends them.
type serving struct {
	c      *workerConn
	in     *bufio.Reader
	engine *sandbox.Engine
	turn   chan struct{} // holds the reading turn while no loop reads
	runMu  sync.Mutex

	quit chan struct{} // closed once serving ends: the stream ended or broke
	once sync.Once
	err  error // why serving ended; read after quit is closed
}

// loop reads when it has the turn and runs the jobs it reads, until
// serving ends.
func (s *serving) loop() {
	for {
		select {
		case <-s.turn:
		case <-s.quit:
			return
		}
		f := s.readRun()
		if f == nil {
			return
		}
		s.turn <- struct{}{} // the other loop reads on
		if err := s.run(f); err != nil {
			s.end(err)
			return
		}
	}
}

// readRun reads frames until a run frame, which it returns: a reply goes to
// the call waiting for it, a stop to the run in progress. When the stream
// ends or breaks, serving ends, every waiting call fails and it returns nil.
func (s *serving) readRun() *Frame {
	for {
		f, err := ReadFrame(s.in)
		if err != nil {
			s.end(err)
			s.c.lost() // no reply can come any more: fail every waiting call
			return nil
		}
		switch f.T {
		case "run":
			if f.Job != nil {
				return f
			}
		case "reply":
			s.c.deliver(f)
		case "stop":
			s.c.stopRun(f.ID, f.Stop)
		}
	}
}

// run runs the job of run frame f and sends its outcome.
func (s *serving) run(f *Frame) error {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	ctx, cancel := context.WithCancelCause(context.Background())
	s.c.startRun(f.ID, cancel, f.Ans, f.Local, f.Snap)
	out := s.engine.Run(ctx, *f.Job, s.c)
	answered := s.c.endRun()
	cancel(nil)
	if err := s.c.send(&Frame{T: "done", ID: f.ID, Out: &out, Answered: answered}); err != nil {
		return err
	}
	s.engine.Prewarm()
	return nil
}

// end ends serving with err, the first reason given.
func (s *serving) end(err error) {
	s.once.Do(func() {
		s.err = err
		close(s.quit)
	})
}

// limitAddressSpace caps the worker's address space (RLIMIT_AS) and Go's
// memory limit for the memory limit the parent passed (envMemory; none:
// no cap): the address space it has now, twice the limit, and
// addressSpaceHeadroom. Under that cap it raises GOGC (setGCPercent).
func limitAddressSpace() (confine.RlimitReport, error) {
	mem, err := strconv.ParseInt(os.Getenv(EnvMemory), 10, 64)
	if err != nil || mem <= 0 {
		return confine.RlimitReport{}, nil
	}
	base, err := addressSpace()
	if err != nil {
		return confine.RlimitReport{}, fmt.Errorf("measuring the worker's address space: %w", err)
	}
	lim := base + 2*uint64(mem) + addressSpaceHeadroom
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: lim, Max: lim}); err != nil {
		return confine.RlimitReport{}, fmt.Errorf("setting RLIMIT_AS: %w", err)
	}
	debug.SetMemoryLimit(mem)
	setGCPercent(os.LookupEnv)
	return confine.RlimitReport{Active: true, Bytes: lim}, nil
}

// workerGCPercent is a worker's GOGC: a worker's own heap is a few MB (a
// goja runtime or two), so at Go's default of 100 it collects every few MB
// a tool allocates, and each call a tool awaits (goja's promise and its
// resolving functions, about 2 KB) spent a fifth of the worker's CPU in
// the collector's marking (perf, pinned reads in a loop). Its heap stays
// bounded by the memory limit set with it: the collector works harder
// near the limit, whatever GOGC says.
const workerGCPercent = 200

// setGCPercent sets a worker's GOGC to workerGCPercent, unless its
// environment (lookup) has one: the operator's choice, which the Go
// runtime applied already.
func setGCPercent(lookup func(string) (string, bool)) {
	if _, set := lookup("GOGC"); !set {
		debug.SetGCPercent(workerGCPercent)
	}
}

// workerConn is the worker's side of the bridge: each call or require is a
// frame to the parent, answered by a reply frame with the same id.
type workerConn struct {
	wmu     sync.Mutex
	out     io.Writer
	next    atomic.Uint64
	mu      sync.Mutex
	waiting map[uint64]*waiter // nil once the parent's stream ended

	rmu    sync.Mutex
	run    uint64                  // the id of the run in progress, 0 between runs
	cancel context.CancelCauseFunc // stops it

	local map[string]bool // the calls answered here and streamed ("clock.now"), this run
	gate  *pinGate        // this run's pinned reads of the tool tree

	amu      sync.Mutex
	answers  map[uint64]*Answer // the run's recorded answers (a replay), by seq
	answered []uint64           // the seqs answered from them
}

// startRun and endRun bracket the run with parent id and its recorded
// answers; endRun returns the seqs answered from them. stopRun stops the
// run if it is still the one in progress (a stop for an ended run is
// ignored).
func (c *workerConn) startRun(id uint64, cancel context.CancelCauseFunc, answers []Answer, local []string, plan *PinPlan) {
	c.rmu.Lock()
	c.run, c.cancel = id, cancel
	c.local, c.gate = nil, newPinGate(plan)
	for _, l := range local {
		if c.local == nil {
			c.local = map[string]bool{}
		}
		c.local[l] = true
	}
	c.rmu.Unlock()
	c.amu.Lock()
	c.answers, c.answered = nil, nil
	if len(answers) > 0 {
		c.answers = make(map[uint64]*Answer, len(answers))
		for i := range answers {
			c.answers[answers[i].Seq] = &answers[i]
		}
	}
	c.amu.Unlock()
}

func (c *workerConn) endRun() []uint64 {
	c.rmu.Lock()
	c.run, c.cancel = 0, nil
	c.rmu.Unlock()
	c.amu.Lock()
	defer c.amu.Unlock()
	answered := c.answered
	c.answers, c.answered = nil, nil
	return answered
}

// recorded returns the recorded answer of call, if the run has one whose
// driver, op and request bytes equal the call's (each is given once).
func (c *workerConn) recorded(call *driver.Call) *Answer {
	c.amu.Lock()
	defer c.amu.Unlock()
	a := c.answers[call.Seq]
	if a == nil || a.Driver != call.Driver || a.Op != call.Op || !bytes.Equal(a.Request, call.Request) {
		return nil
	}
	delete(c.answers, call.Seq)
	c.answered = append(c.answered, call.Seq)
	return a
}

func (c *workerConn) stopRun(id uint64, reason *sandbox.Error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.run != id || c.cancel == nil {
		return
	}
	if reason == nil {
		reason = &sandbox.Error{Kind: sandbox.KindCancelled, Message: "the run was stopped by its parent"}
	}
	c.cancel(reason)
}

// Aborted tells the parent at once that the run is being stopped and why
// (see sandbox.Aborter): if a native built-in keeps it from stopping, the
// parent kills this worker and still reports the right kind (memory_limit
// rather than timeout, for a memory bomb).
func (c *workerConn) Aborted(reason *sandbox.Error) {
	c.rmu.Lock()
	id := c.run
	c.rmu.Unlock()
	if id != 0 {
		_ = c.send(&Frame{T: "abort", ID: id, Stop: reason})
	}
}

func (c *workerConn) send(f *Frame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return WriteFrame(c.out, f)
}

// waiter is a call or require waiting for the parent's reply: done gets
// the reply (or the reason there is none) exactly once, from whoever takes
// the waiter out of the map; unwatch stops its context's watch.
type waiter struct {
	done    func(*Frame, error)
	unwatch func() bool
}

// take removes the waiter of id, if it is still waiting.
func (c *workerConn) take(id uint64) *waiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	wt := c.waiting[id]
	delete(c.waiting, id)
	return wt
}

func (c *workerConn) deliver(f *Frame) {
	if wt := c.take(f.ID); wt != nil {
		wt.unwatch()
		if f.Err != nil {
			wt.done(nil, f.Err)
			return
		}
		wt.done(f, nil)
	}
}

// lost fails every waiting call: the parent's stream ended.
func (c *workerConn) lost() {
	c.mu.Lock()
	waiting := c.waiting
	c.waiting = nil
	c.mu.Unlock()
	for _, wt := range waiting {
		wt.unwatch()
		wt.done(nil, errLost())
	}
}

func errLost() error {
	return driver.Errorf(driver.CodeAbort, "the sandbox worker lost its connection to the runtime")
}

// startAsk sends f to the parent and returns; done gets the reply, or why
// there is none (the stream ended, ctx ended first, f could not be sent).
func (c *workerConn) startAsk(ctx context.Context, f *Frame, done func(*Frame, error)) {
	f.ID = c.next.Add(1)
	id := f.ID
	wt := &waiter{done: done}
	c.mu.Lock()
	if c.waiting == nil {
		c.mu.Unlock()
		done(nil, errLost())
		return
	}
	c.waiting[id] = wt
	// Set under c.mu: whoever takes the waiter out finds it set.
	wt.unwatch = context.AfterFunc(ctx, func() {
		if wt := c.take(id); wt != nil {
			wt.done(nil, driver.Errorf(driver.CodeUnavailable, "the run ended before the parent answered"))
		}
	})
	c.mu.Unlock()
	if err := c.send(f); err != nil {
		if wt := c.take(id); wt != nil {
			wt.unwatch()
			if errors.Is(err, ErrFrameTooBig) {
				done(nil, driver.Errorf(driver.CodeInvalid, "the request is too large to send in one call (%v); send less", err))
				return
			}
			done(nil, driver.Errorf(driver.CodeUnavailable, "worker: sending to the parent: %v", err))
		}
	}
}

func (c *workerConn) ask(ctx context.Context, f *Frame) (*Frame, error) {
	type reply struct {
		f   *Frame
		err error
	}
	ch := make(chan reply, 1)
	c.startAsk(ctx, f, func(r *Frame, err error) { ch <- reply{r, err} })
	r := <-ch
	return r.f, r.err
}

func (c *workerConn) Do(ctx context.Context, call driver.Call) (json.RawMessage, error) {
	type reply struct {
		val json.RawMessage
		err error
	}
	ch := make(chan reply, 1)
	c.Start(ctx, call, func(val json.RawMessage, err error) { ch <- reply{val, err} })
	r := <-ch
	return r.val, r.err
}

// Start answers call from the run's pinned reads, its recorded answers or
// here (a local call), or asks the parent and returns at once: done gets
// the parent's reply from the goroutine reading the parent's frames
// (sandbox.Starter). An fs call of a run that pins goes through its gate
// (pinGate), in call order.
func (c *workerConn) Start(ctx context.Context, call driver.Call, done func(json.RawMessage, error)) {
	c.rmu.Lock()
	g := c.gate
	c.rmu.Unlock()
	if g != nil && g.gates(call) {
		g.start(gated{call: call, done: done, ask: func(d func(json.RawMessage, bool, error)) { c.startCall(ctx, call, d) }})
		return
	}
	c.startCall(ctx, call, func(v json.RawMessage, _ bool, err error) { done(v, err) })
}

// Instant answers call from the run's pinned reads when its gate would
// answer it at once (sandbox.Instant): no channel, callback or queue.
func (c *workerConn) Instant(call driver.Call) (json.RawMessage, bool) {
	c.rmu.Lock()
	g := c.gate
	c.rmu.Unlock()
	if g == nil {
		return nil, false
	}
	return g.instant(call)
}

// startCall answers call from the recorded answers or here, or asks the
// parent; done also gets whether the parent marked the answer pinnable.
func (c *workerConn) startCall(ctx context.Context, call driver.Call, done func(json.RawMessage, bool, error)) {
	if a := c.recorded(&call); a != nil {
		if a.Err != nil {
			done(nil, false, &driver.Error{Code: a.Err.Code, Message: a.Err.Message})
			return
		}
		done(a.Val, false, nil)
		return
	}
	if val, ok := c.answerLocal(ctx, call); ok {
		done(val, false, nil)
		return
	}
	c.startAsk(ctx, &Frame{T: "call", Call: &call}, func(r *Frame, err error) {
		if err != nil {
			done(nil, false, err)
			return
		}
		done(r.Val, r.Pin, nil)
	})
}

// localDevices are the devices a worker may run itself for a run that
// streams its local calls.
var localDevices = map[string]driver.Device{driver.ClockDriver: driver.Clock{}, driver.RandomDriver: driver.Random{}}

// answerLocal answers call here when the run streams it (clock.now,
// random.seed), and streams the call with its answer to the parent
// without waiting. ok false: ask the parent.
func (c *workerConn) answerLocal(ctx context.Context, call driver.Call) (json.RawMessage, bool) {
	c.rmu.Lock()
	id, local := c.run, c.local[call.Driver+"."+call.Op]
	c.rmu.Unlock()
	if !local || id == 0 {
		return nil, false
	}
	val, err := localDevices[call.Driver].Do(ctx, call.Op, call.Request)
	if err != nil {
		return nil, false // the parent's device answers, or fails, as it would
	}
	// IMPORTANT: the answer is used only once its frame is written: a
	// parent that never got it cannot journal it, and a worker that dies
	// after this write leaves it in the pipe, where the parent reads it.
	if err := c.send(&Frame{T: "rec", ID: id, Call: &call, Val: val}); err != nil {
		return nil, false
	}
	return val, true
}

func (c *workerConn) Require(ctx context.Context, from, spec string) (sandbox.Module, error) {
	r, err := c.ask(ctx, &Frame{T: "require", From: from, Spec: spec})
	if err != nil {
		return sandbox.Module{}, err
	}
	if r.Mod == nil {
		return sandbox.Module{}, driver.Errorf(driver.CodeIO, "the parent answered require(%q) without a module", spec)
	}
	return *r.Mod, nil
}
