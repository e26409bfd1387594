package executor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
	"github.com/agentos-run/agentos/actors/executor/internal/workerside"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/internal/units"
)

// pool keeps up to n warm worker processes; each runs one tool at a time.
type pool struct {
	opts  Options
	log   *slog.Logger
	slots chan struct{} // one per run in flight

	mu  sync.Mutex
	all map[*worker]struct{}
	// idle are the workers waiting for a run, in the order they came back:
	// get takes it first (LIFO), so that runs one at a time keep going to
	// the same warm process (its threads awake, its caches and heap hot)
	// while the others wait as spare capacity. Taken in turn (FIFO), each
	// of n workers slept n-1 runs between two of its own.
	idle   []*worker
	max    int // of idle: the pool's size
	closed bool
	wg     sync.WaitGroup // prewarming and reaper goroutines

	binary     func() (WorkerBinary, error) // the worker program, found once (no WorkerCommand)
	prot       atomic.Pointer[Protections]  // the latest worker's hello
	warnOnce   sync.Once                    // best effort fell short
	refuseOnce sync.Once                    // required could not be met
}

func newPool(n int, opts Options) *pool {
	p := &pool{opts: opts, log: opts.Logger, slots: make(chan struct{}, n), max: n, all: map[*worker]struct{}{}}
	p.binary = sync.OnceValues(p.findBinary)
	p.wg.Go(func() {
		for range n {
			w, err := p.spawn()
			if errors.Is(err, errPoolClosed) {
				return
			}
			if err != nil {
				p.log.Warn("agentos: prewarming a sandbox worker failed; workers will be started on demand", "err", err)
				return
			}
			p.put(w, true)
		}
	})
	return p
}

var errPoolClosed = errors.New("the executor is closed")

// worker is the parent's handle on one worker process.
type worker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *tail
	exited chan struct{}
	nextID uint64
	// greeted: its hello frame was read. A worker that breaks the protocol
	// before it is not a worker that escaped goja but a program that is no
	// worker at all (an embedding program without WorkerMain).
	greeted atomic.Bool
	// separate: it is the WorkerBinaryName found next to the executable,
	// whose hello MUST name this program's build.
	separate bool

	mu     sync.Mutex
	reason string // why the parent killed it, if it did
	rss    int64  // its resident memory when killed for a run that did not stop
	wmu    sync.Mutex
}

func (w *worker) alive() bool {
	select {
	case <-w.exited:
		return false
	default:
		return true
	}
}

// kill SIGKILLs the worker, remembering why (the first reason wins).
func (w *worker) kill(reason string) {
	w.mu.Lock()
	first := w.reason == ""
	if first {
		w.reason = reason
	}
	w.mu.Unlock()
	if w.cmd.Process == nil {
		return
	}
	if first && (reason == "timeout" || reason == "limit") {
		// What it holds when a stuck run is killed tells a memory bomb (a
		// native loop growing an array past the limit) from a slow
		// computation. A worker's Go runtime has a soft memory limit equal
		// to the run's limit and returns memory to the system to stay
		// under it: resident memory over the limit is live data over it.
		rss := residentBytes(w.cmd.Process.Pid)
		w.mu.Lock()
		w.rss = rss
		w.mu.Unlock()
	}
	_ = w.cmd.Process.Kill()
}

// residentBytes returns the resident set size of process pid in bytes
// (VmRSS), or 0 when it cannot be read.
func residentBytes(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// rssAtKill is the worker's resident memory when the parent killed it for
// a run that did not stop (0 if unknown).
func (w *worker) rssAtKill() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rss
}

func (w *worker) killReason() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reason
}

func (w *worker) send(f *frame) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	return writeFrame(w.stdin, f)
}

func (p *pool) spawn() (*worker, error) {
	argv, separate, err := p.argv()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), envWorker+"=1", envMemory+"="+strconv.FormatInt(p.opts.Limits.MemoryBytes, 10), envConfine+"="+string(p.opts.Confine))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	w := &worker{cmd: cmd, stderr: &tail{max: 8 << 10}, exited: make(chan struct{}), separate: separate}
	cmd.Stderr = w.stderr
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w.out = bufio.NewReaderSize(stdout, 64<<10)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errPoolClosed
	}
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		return nil, fmt.Errorf("starting sandbox worker %s: %w", argv[0], err)
	}
	p.all[w] = struct{}{}
	p.wg.Go(func() {
		_ = cmd.Wait()
		close(w.exited)
		p.mu.Lock()
		delete(p.all, w)
		p.mu.Unlock()
	})
	p.mu.Unlock()
	return w, nil
}

// argv is the command that starts a worker: WorkerCommand if set, else the
// worker program found next to the executable (separate) or the
// executable itself.
func (p *pool) argv() (argv []string, separate bool, err error) {
	if len(p.opts.WorkerCommand) > 0 {
		return p.opts.WorkerCommand, false, nil
	}
	if p.binary == nil { // a pool made for one probe
		p.binary = sync.OnceValues(p.findBinary)
	}
	b, err := p.binary()
	if err != nil {
		return nil, false, err
	}
	return []string{b.Path}, b.Separate, nil
}

// findBinary finds the worker program once and says which it is.
func (p *pool) findBinary() (WorkerBinary, error) {
	b, err := FindWorkerBinary()
	switch {
	case err != nil, p.log == nil: // a pool made by a test
	case b.Refused:
		p.log.Warn("agentos: the sandbox worker program next to this one is not used; workers are this program started again, which starts slower", "why", b.Why)
	default:
		p.log.Debug("agentos: sandbox worker program", "path", b.Path, "separate", b.Separate, "why", b.Why)
	}
	return b, err
}

// foreignWorker says why a worker's hello is refused: a separate worker
// MUST be this program's build (its file was checked when it was found;
// this catches one replaced since). "" when it is accepted.
func foreignWorker(w *worker, build string) string {
	own := workerside.BuildID().ID
	if !w.separate || build == own {
		return ""
	}
	return fmt.Sprintf("the sandbox worker %s says it is build %q, not this program's %q (it was replaced since it was found?): the run fails and the worker was killed; rebuild both together (go build ./cmd/...) or remove it, then restart", w.cmd.Path, build, own)
}

// get takes a run slot and a live worker, starting one if none is idle.
func (p *pool) get(ctx context.Context) (*worker, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			w, err := p.spawn()
			if err != nil {
				<-p.slots
			}
			return w, err
		}
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		if w.alive() {
			return w, nil
		}
	}
}

// put returns a healthy worker to the idle set; an unhealthy one is killed.
func (p *pool) put(w *worker, healthy bool) {
	p.mu.Lock()
	if healthy && !p.closed && w.alive() && len(p.idle) < p.max {
		p.idle = append(p.idle, w)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	w.kill("retired")
	_ = w.stdin.Close()
}

func (p *pool) release(w *worker, healthy bool) {
	p.put(w, healthy)
	<-p.slots
}

func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	for w := range p.all {
		w.kill("cancelled")
		_ = w.stdin.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// callHelpers returns goCall, which runs f on a helper goroutine of a
// run: an idle one, whose stack earlier calls already grew, or a new one.
// Helpers are counted in calls and end with runCtx.
func callHelpers(runCtx context.Context, calls *sync.WaitGroup) (goCall func(f func())) {
	work := make(chan func())
	return func(f func()) {
		select {
		case work <- f:
			return
		default:
		}
		calls.Add(1)
		go func() {
			defer calls.Done()
			for {
				f()
				select {
				case f = <-work:
				case <-runCtx.Done():
					return
				}
			}
		}()
	}
}

// run executes job on a worker, answering its bridge calls, and classifies
// the worker's death if it dies.
func (p *pool) run(ctx context.Context, job sandbox.Job, br *bridge) sandbox.Outcome {
	w, err := p.get(ctx)
	if err != nil {
		return sandbox.Outcome{Err: &Error{Kind: sandbox.KindCancelled, Message: "no sandbox worker: " + err.Error()}}
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &running{p: p, w: w, job: job, br: br, ctx: runCtx, cancel: cancel,
		seen: map[uint64]struct{}{}, hold: &held{max: maxHeldBytes}}
	r.goCall = callHelpers(runCtx, &r.calls)
	w.nextID++
	r.id = w.nextID
	if err := w.send(&frame{T: "run", ID: r.id, Job: &job, Ans: br.answers, Local: br.local, Snap: br.plan}); err != nil {
		p.release(w, false)
		return sandbox.Outcome{Err: p.death(w, job, nil)}
	}
	r.watch(ctx)
	for {
		if r.pending > 0 {
			r.hold.release(r.pending)
		}
		f, n, err := readHeld(w.out, r.hold, w.exited)
		r.pending = n
		if err != nil {
			return r.broken(err)
		}
		if out, done := r.handle(f); done {
			return out
		}
	}
}

// running is one run on a worker, between its run frame and its end: the
// frames the worker sends are handled by its methods, in order, on run's
// goroutine (the calls it makes are answered on helper goroutines).
type running struct {
	p      *pool
	w      *worker
	job    sandbox.Job
	br     *bridge
	id     uint64
	ctx    context.Context // the run's: ends with it
	cancel context.CancelFunc
	// IMPORTANT: the parent's goroutines answering this run's calls end
	// with it: cancelled, then waited for, before the worker is released.
	calls  sync.WaitGroup
	goCall func(func())

	smu     sync.Mutex
	stopped *Error      // why the worker said its run is stopping
	killer  *time.Timer // armed once the run is being stopped
	// deadline and stop watch the run's time limit and its caller's ctx.
	deadline *time.Timer
	stop     func() bool

	streamErr *Error // the first streamed call Middleware failed
	// seen holds the sequence numbers of the run's calls: a worker (its
	// seq counter is its own) MUST NOT make or report one twice, which
	// would overwrite the journal's entry of the first (a recorded answer,
	// a sealed read) with what the worker says.
	seen map[uint64]struct{}
	// hold bounds the bytes of this worker's frames the parent holds: a
	// frame is held until it is handled (a call's, until it is answered).
	hold    *held
	pending int // the bytes of the frame handled last, released before the next read
}

// watch arms the run's watchers. IMPORTANT: interrupt first, kill only
// what ignores the interrupt. The worker stops its own run at the deadline
// (or its memory or output limit) and says so at once with an "abort"
// frame; at the parent's deadline (a KillGrace later, in case the worker's
// clock started late) the parent asks it to stop. Either way, a worker
// that has not finished its run KillGrace after being stopped is
// SIGKILLed: a native built-in is ignoring the interrupt.
func (r *running) watch(ctx context.Context) {
	r.deadline = timeAfter(r.job.Limits.Timeout+r.p.opts.KillGrace, func() {
		timeout := &Error{Kind: sandbox.KindTimeout, Message: fmt.Sprintf("the tool ran longer than its %v limit and was stopped; look for an endless loop or raise the timeout", r.job.Limits.Timeout)}
		_ = r.w.send(&frame{T: "stop", ID: r.id, Stop: timeout})
		r.stopping("timeout")
	})
	r.stop = context.AfterFunc(ctx, func() { r.w.kill("cancelled") })
}

// stopping arms the killer once the run is being stopped.
func (r *running) stopping(why string) {
	r.smu.Lock()
	defer r.smu.Unlock()
	if r.killer == nil {
		r.killer = timeAfter(r.p.opts.KillGrace, func() { r.w.kill(why) })
	}
}

// disarm stops every watcher; it reports false if one already fired and
// the worker may be killed (it must not return to the pool).
func (r *running) disarm() bool {
	ok := r.deadline.Stop()
	ok = r.stop() && ok
	r.smu.Lock()
	if r.killer != nil {
		ok = r.killer.Stop() && ok
	}
	r.smu.Unlock()
	return ok
}

// drop ends the run on a worker it no longer trusts: killed (saying why),
// its watchers and helpers stopped, the worker released as unhealthy.
func (r *running) drop(why string) {
	r.w.kill(why)
	r.disarm()
	r.finish()
	r.p.release(r.w, false)
}

// finish ends the run's helper goroutines: cancelled, then waited for.
func (r *running) finish() {
	r.cancel()
	r.calls.Wait()
}

// death explains the worker's death, with what it said before dying.
func (r *running) death() *Error {
	r.smu.Lock()
	said := r.stopped
	r.smu.Unlock()
	return r.p.death(r.w, r.job, said)
}

// again reports whether the worker made or reported call c before in this
// run (and fails the run if so).
func (r *running) again(c *driver.Call) bool {
	if _, dup := r.seen[c.Seq]; dup {
		if r.streamErr == nil {
			r.streamErr = &Error{Kind: sandbox.KindHostFailure, Message: fmt.Sprintf("%s: the worker made call #%d a second time; the journal keeps the first and the run fails (a worker that breaks the protocol is not trusted)", c, c.Seq)}
		}
		return true
	}
	r.seen[c.Seq] = struct{}{}
	return false
}

// broken ends a run whose worker could not be read from: it broke the
// protocol or died.
func (r *running) broken(err error) sandbox.Outcome {
	broke := brokeProtocol(r.w, err)
	r.disarm()
	r.finish()
	r.p.release(r.w, false)
	if broke != nil {
		return sandbox.Outcome{Err: broke}
	}
	return sandbox.Outcome{Err: r.death()}
}

// handle handles one frame of the worker; done says the run is over with
// out.
func (r *running) handle(f *frame) (out sandbox.Outcome, done bool) {
	switch f.T {
	case "hello":
		return r.onHello(f)
	case "abort":
		r.onAbort(f)
	case "call":
		r.onCall(f)
	case "rec":
		r.onRec(f)
	case "require":
		r.onRequire(f)
	case "done":
		return r.onDone(f)
	}
	return sandbox.Outcome{}, false
}

// onAbort: the worker is stopping its run at a limit.
func (r *running) onAbort(f *frame) {
	if f.ID != r.id || f.Stop == nil {
		return
	}
	r.smu.Lock()
	// The first reason wins, but memory wins over a deadline: a run
	// stopped at its deadline whose native built-in then kept allocating
	// past the limit is a memory bomb.
	if r.stopped == nil || f.Stop.Kind == sandbox.KindMemory && r.stopped.Kind != sandbox.KindMemory {
		r.stopped = f.Stop
	}
	r.smu.Unlock()
	r.stopping("limit")
}

// onCall answers a call of the tool on a helper goroutine.
func (r *running) onCall(f *frame) {
	if f.Call == nil {
		return
	}
	call, fid := *f.Call, f.ID
	if r.again(&call) {
		_ = r.w.send(&frame{T: "reply", ID: fid, Err: driver.Errorf(driver.CodeInvalid, "%s: call #%d was already made in this run: not performed", call, call.Seq)})
		return
	}
	if r.br.snap != nil {
		r.br.snap.started(call) // IMPORTANT: in call order (the worker's pinGate sends them so)
	}
	size := r.pending // released once answered
	r.pending = 0
	r.goCall(func() {
		defer r.hold.release(size)
		val, pin, err := r.br.doPinned(r.ctx, call)
		rep := &frame{T: "reply", ID: fid, Val: val, Pin: pin}
		if err != nil {
			rep.Err, rep.Val, rep.Pin = driver.AsError(err), nil, false
		}
		if err := r.w.send(rep); errors.Is(err, errFrameTooBig) {
			_ = r.w.send(&frame{T: "reply", ID: fid, Err: driver.Errorf(driver.CodeInvalid, "%s: the answer is too large to hand to a tool in one call (%v); ask for less", call, err)})
		}
	})
}

// onRec records a call the worker answered itself: handled here, in
// order, before any later frame (the run's done among them).
func (r *running) onRec(f *frame) {
	if f.ID != r.id || f.Call == nil || !slices.Contains(r.br.local, f.Call.Driver+"."+f.Call.Op) {
		return // not a call this run streams: ignored
	}
	if r.again(f.Call) {
		return
	}
	if _, err := r.br.Do(streamedAnswer(r.ctx, f.Val), *f.Call); err != nil && r.streamErr == nil {
		r.streamErr = &Error{Kind: sandbox.KindHostFailure, Message: fmt.Sprintf("%s: the worker answered it, then: %v", f.Call, err), Code: driver.AsError(err).Code}
	}
}

// onRequire answers the worker's require of a module.
func (r *running) onRequire(f *frame) {
	m, err := r.br.Require(r.ctx, f.From, f.Spec)
	rep := &frame{T: "reply", ID: f.ID, Mod: &m}
	if err != nil {
		rep.Err, rep.Mod = driver.AsError(err), nil
	}
	if err := r.w.send(rep); errors.Is(err, errFrameTooBig) {
		_ = r.w.send(&frame{T: "reply", ID: f.ID, Err: driver.Errorf(driver.CodeInvalid, "require(%q): the module is too large (%v)", f.Spec, err)})
	}
}

// onDone ends the run with the worker's outcome.
func (r *running) onDone(f *frame) (sandbox.Outcome, bool) {
	if f.ID != r.id || f.Out == nil {
		return sandbox.Outcome{}, false
	}
	if over := overOutput(f.Out, r.job.Limits); over != nil {
		r.drop("protocol")
		return sandbox.Outcome{Err: over}, true
	}
	if r.br.consumed != nil {
		r.br.consumed(f.Answered...)
	}
	healthy := r.disarm()
	r.finish()
	r.p.release(r.w, healthy)
	out := *f.Out
	if r.streamErr != nil && out.Err == nil {
		out.Err, out.Result = r.streamErr, nil
	}
	return out, true
}

// outcomeSlack is what an honest worker's outcome may hold beyond its
// run's output limit: the warnings it adds after its last check (a NaN
// result's), and an error's message and stack, each clipped to 64 KiB.
const outcomeSlack = 256 << 10

// overOutput refuses an outcome larger than its run's output limit allows.
// IMPORTANT: the worker enforces the limit; the parent, which does not
// trust it, checks that it did, so that a worker that escaped goja cannot
// hand the host (the journal, the caller) up to a frame's 64 MiB per run.
func overOutput(out *sandbox.Outcome, lim sandbox.Limits) *Error {
	n := len(out.Result)
	for _, l := range out.Logs {
		n += len(l)
	}
	if e := out.Err; e != nil {
		n += len(e.Kind) + len(e.Message) + len(e.Stack) + len(e.Code)
	}
	limit := lim.WithDefaults().MaxOutputBytes
	if n <= limit+outcomeSlack {
		return nil
	}
	return &Error{Kind: sandbox.KindHostFailure, Message: fmt.Sprintf("the sandbox worker returned an outcome of %d bytes, over its run's %d-byte output limit, which the worker enforces; the run fails and its worker was killed (a worker that breaks the protocol is not trusted). A tool cannot do this through its own output: report it, with the tool, as a bug or an escape from the sandbox", n, limit)}
}

// onHello records the worker's protections, or fails the run and kills
// the worker if it is a separate worker of another build.
func (r *running) onHello(f *frame) (sandbox.Outcome, bool) {
	r.w.greeted.Store(true)
	if why := foreignWorker(r.w, f.Build); why != "" {
		r.drop("foreign")
		return sandbox.Outcome{Err: &Error{Kind: sandbox.KindHostFailure, Message: why}}, true
	}
	r.p.hello(f.Prot)
	return sandbox.Outcome{}, false
}

// brokeProtocol kills w and explains the run's failure if err says the
// worker broke the frame protocol (a frame over the limit, a malformed
// one); nil for any other read error (the worker died: see death).
func brokeProtocol(w *worker, err error) *Error {
	if !errors.Is(err, errFrameRefused) && !errors.Is(err, errMalformed) {
		return nil
	}
	w.kill("protocol")
	if !w.greeted.Load() {
		return &Error{Kind: sandbox.KindHostFailure, Message: fmt.Sprintf("the program started as a sandbox worker (%s) did not answer as one: %v; the run fails and its worker was killed. A Go program that embeds agentos MUST call executor.WorkerMain() first thing in main (and in TestMain for its tests), since workers are that program started again; or set the executor's WorkerCommand to an agentos binary", w.cmd.Path, err)}
	}
	return &Error{Kind: sandbox.KindHostFailure, Message: fmt.Sprintf("the sandbox worker broke the frame protocol (%v); the run fails and its worker was killed (a worker that breaks the protocol is not trusted). A tool cannot do this through its own calls: report it, with the tool, as a bug or an escape from the sandbox", err)}
}

// death explains why a worker stopped answering during a run. said is
// what the worker reported as the reason its run was stopping, if it did.
func (p *pool) death(w *worker, job sandbox.Job, said *Error) *Error {
	<-w.exited
	switch w.killReason() {
	case "timeout", "limit":
		return p.stopped(w, job, said)
	case "cancelled":
		return &Error{Kind: sandbox.KindCancelled, Message: "the run was cancelled by its caller and its worker stopped"}
	}
	return p.crashed(w, job)
}

// stopped explains the death of a worker killed at its run's deadline or
// a limit: it did not stop within KillGrace of being interrupted. said is
// what the worker reported as the reason its run was stopping, if it did.
func (p *pool) stopped(w *worker, job sandbox.Job, said *Error) *Error {
	ignored := fmt.Sprintf("; it did not stop within %v of being interrupted (a native built-in such as JSON.stringify, sort or a huge array operation was still running), so its worker was killed", p.opts.KillGrace)
	rss := w.rssAtKill()
	held := ""
	if rss > 0 {
		held = fmt.Sprintf(" (it held %d of its %d bytes of memory)", rss, job.Limits.MemoryBytes)
	}
	switch {
	case (said == nil || said.Kind == sandbox.KindTimeout) && rss > job.Limits.MemoryBytes:
		// Stopped at its deadline while a native built-in kept allocating:
		// a memory bomb that had not yet tripped the heap watchdog.
		return &Error{Kind: sandbox.KindMemory, Message: fmt.Sprintf("the tool exceeded its %d-byte memory limit (its worker process held %d bytes when it was killed) while a native built-in that ignores interrupts was still running past its %v deadline; allocate less (e.g. no huge arrays or strings)", job.Limits.MemoryBytes, rss, job.Limits.Timeout)}
	case said != nil:
		// The worker said why it was stopping (its memory limit, its
		// deadline, its output limit): that is the run's failure.
		e := *said
		e.Message += ignored
		if said.Kind == sandbox.KindTimeout {
			e.Message += held
		}
		return &e
	}
	return &Error{Kind: sandbox.KindTimeout, Message: fmt.Sprintf("the tool ran longer than its %v limit and was stopped", job.Limits.Timeout) + ignored + held + "; look for huge inputs or an endless loop"}
}

// crashed explains the death of a worker the pool did not kill, from its
// exit code and what it wrote on stderr.
func (p *pool) crashed(w *worker, job sandbox.Job) *Error {
	stderr := w.stderr.String()
	switch {
	case w.cmd.ProcessState != nil && w.cmd.ProcessState.ExitCode() == exitConfine:
		msg := "the sandbox worker refused to start: " + lastLines(stderr, 2)
		p.refuseOnce.Do(func() { p.log.Error("agentos: "+msg, "confine", p.opts.Confine) })
		return &Error{Kind: sandbox.KindCrash, Message: msg}
	case outOfMemory(stderr):
		return &Error{Kind: sandbox.KindMemory, Message: fmt.Sprintf("the tool exceeded its %s memory limit and its worker process was stopped; allocate less (e.g. stream rows instead of building one huge string or array)", units.Bytes(job.Limits.MemoryBytes))}
	case strings.Contains(stderr, "stack overflow") || strings.Contains(stderr, "stack exceeds"):
		return &Error{Kind: sandbox.KindStack, Message: "the tool overflowed the worker's native stack; look for runaway recursion"}
	}
	return &Error{Kind: sandbox.KindCrash, Message: fmt.Sprintf("the sandbox worker died (%v); this is a bug in agentos or the runtime, please report it with this output: %s", w.cmd.ProcessState, lastLines(stderr, 5))}
}

// outOfMemory reports whether a worker's stderr shows it died because the
// address-space limit refused memory: Go's "out of memory", mmap's ENOMEM,
// or the race detector's failure to map or allocate its shadow memory.
func outOfMemory(stderr string) bool {
	for _, s := range []string{"out of memory", "cannot allocate memory", "address space collisions", "failed to allocate"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// tail keeps the first and the last max/2 bytes written to it (a worker's
// stderr): a Go fatal error names its cause at the top of a long dump.
type tail struct {
	mu   sync.Mutex
	max  int
	head []byte
	buf  []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(b)
	if room := t.max/2 - len(t.head); room > 0 {
		k := min(room, len(b))
		t.head = append(t.head, b[:k]...)
		b = b[k:]
	}
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max/2; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return n, nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.head) + string(t.buf)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}
