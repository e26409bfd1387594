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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
	"github.com/agentos-run/agentos/driver"
)

// pool keeps up to n warm worker processes; each runs one tool at a time.
type pool struct {
	opts  Options
	log   *slog.Logger
	slots chan struct{} // one per run in flight
	idle  chan *worker

	mu     sync.Mutex
	all    map[*worker]struct{}
	closed bool
	wg     sync.WaitGroup // prewarming and reaper goroutines

	prot       atomic.Pointer[Protections] // the latest worker's hello
	warnOnce   sync.Once                   // best effort fell short
	refuseOnce sync.Once                   // required could not be met
}

func newPool(n int, opts Options) *pool {
	p := &pool{opts: opts, log: opts.Logger, slots: make(chan struct{}, n), idle: make(chan *worker, n), all: map[*worker]struct{}{}}
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

	mu     sync.Mutex
	reason string // why the parent killed it, if it did
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
	if w.reason == "" {
		w.reason = reason
	}
	w.mu.Unlock()
	if w.cmd.Process != nil {
		_ = w.cmd.Process.Kill()
	}
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
	argv := p.opts.WorkerCommand
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding this program's executable to start a sandbox worker: %w", err)
		}
		argv = []string{exe}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), envWorker+"=1", envMemory+"="+strconv.FormatInt(p.opts.Limits.MemoryBytes, 10), envConfine+"="+string(p.opts.Confine))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	w := &worker{cmd: cmd, stderr: &tail{max: 8 << 10}, exited: make(chan struct{})}
	cmd.Stderr = w.stderr
	var err error
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

// get takes a run slot and a live worker, starting one if none is idle.
func (p *pool) get(ctx context.Context) (*worker, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for {
		select {
		case w := <-p.idle:
			if w.alive() {
				return w, nil
			}
		default:
			w, err := p.spawn()
			if err != nil {
				<-p.slots
			}
			return w, err
		}
	}
}

// put returns a healthy worker to the idle set; an unhealthy one is killed.
func (p *pool) put(w *worker, healthy bool) {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if healthy && !closed && w.alive() {
		select {
		case p.idle <- w:
			return
		default:
		}
	}
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

// run executes job on a worker, answering its bridge calls, and classifies
// the worker's death if it dies.
func (p *pool) run(ctx context.Context, job sandbox.Job, br *bridge) sandbox.Outcome {
	w, err := p.get(ctx)
	if err != nil {
		return sandbox.Outcome{Err: &Error{Kind: sandbox.KindCancelled, Message: "no sandbox worker: " + err.Error()}}
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// IMPORTANT: the parent's goroutines answering this run's calls end
	// with it: cancelled, then waited for, before the worker is released.
	var calls sync.WaitGroup
	finish := func() {
		cancel()
		calls.Wait()
	}
	w.nextID++
	id := w.nextID
	if err := w.send(&frame{T: "run", ID: id, Job: &job}); err != nil {
		p.release(w, false)
		return sandbox.Outcome{Err: p.death(w, job)}
	}
	deadline := timeAfter(job.Limits.Timeout+p.opts.KillGrace, func() { w.kill("timeout") })
	stop := context.AfterFunc(ctx, func() { w.kill("cancelled") })
	// disarm stops both watchers; it reports false if either already fired
	// (the worker is being killed and must not return to the pool).
	disarm := func() bool { return deadline.Stop() && stop() }

	for {
		f, err := readFrame(w.out)
		if err != nil {
			disarm()
			finish()
			p.release(w, false)
			return sandbox.Outcome{Err: p.death(w, job)}
		}
		switch f.T {
		case "hello":
			p.hello(f.Prot)
		case "call":
			if f.Call == nil {
				continue
			}
			call, fid := *f.Call, f.ID
			calls.Add(1)
			go func() {
				defer calls.Done()
				val, err := br.Do(runCtx, call)
				r := &frame{T: "reply", ID: fid, Val: val}
				if err != nil {
					r.Err, r.Val = driver.AsError(err), nil
				}
				if err := w.send(r); errors.Is(err, errFrameTooBig) {
					_ = w.send(&frame{T: "reply", ID: fid, Err: driver.Errorf(driver.CodeInvalid, "%s: the answer is too large to hand to a tool in one call (%v); ask for less", call, err)})
				}
			}()
		case "require":
			m, err := br.Require(runCtx, f.From, f.Spec)
			r := &frame{T: "reply", ID: f.ID, Mod: &m}
			if err != nil {
				r.Err, r.Mod = driver.AsError(err), nil
			}
			if err := w.send(r); errors.Is(err, errFrameTooBig) {
				_ = w.send(&frame{T: "reply", ID: f.ID, Err: driver.Errorf(driver.CodeInvalid, "require(%q): the module is too large (%v)", f.Spec, err)})
			}
		case "done":
			if f.ID != id || f.Out == nil {
				continue
			}
			healthy := disarm()
			finish()
			p.release(w, healthy)
			return *f.Out
		}
	}
}

// death explains why a worker stopped answering during a run.
func (p *pool) death(w *worker, job sandbox.Job) *Error {
	<-w.exited
	stderr := w.stderr.String()
	switch reason := w.killReason(); {
	case reason == "timeout":
		return &Error{Kind: sandbox.KindTimeout, Message: fmt.Sprintf("the tool ran longer than its %v limit and did not stop (a native built-in such as JSON.stringify or sort was still running), so its worker was killed; look for huge inputs or an endless loop", job.Limits.Timeout)}
	case reason == "cancelled":
		return &Error{Kind: sandbox.KindCancelled, Message: "the run was cancelled by its caller and its worker stopped"}
	case w.cmd.ProcessState != nil && w.cmd.ProcessState.ExitCode() == exitConfine:
		msg := "the sandbox worker refused to start: " + lastLines(stderr, 2)
		p.refuseOnce.Do(func() { p.log.Error("agentos: "+msg, "confine", p.opts.Confine) })
		return &Error{Kind: sandbox.KindCrash, Message: msg}
	case outOfMemory(stderr):
		return &Error{Kind: sandbox.KindMemory, Message: fmt.Sprintf("the tool exceeded its %d-byte memory limit and its worker process was stopped; allocate less (e.g. stream rows instead of building one huge string or array)", job.Limits.MemoryBytes)}
	case strings.Contains(stderr, "stack overflow") || strings.Contains(stderr, "stack exceeds"):
		return &Error{Kind: sandbox.KindStack, Message: "the tool overflowed the worker's native stack; look for runaway recursion"}
	default:
		return &Error{Kind: sandbox.KindCrash, Message: fmt.Sprintf("the sandbox worker died (%v); this is a bug in agentos or the runtime, please report it with this output: %s", w.cmd.ProcessState, lastLines(stderr, 5))}
	}
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
