package sandbox

// One run: its state, Run, the abort on a limit or cancellation, the
// tool's default export called and its promise settled.

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"

	driver "github.com/agentos-run/agentos/driver/driverbase"
)

type callResult struct {
	val json.RawMessage
	err error
}

// pending is a call whose promise the run's loop has yet to settle.
type pending struct {
	ch              chan callResult // its answer; nil: res, answered when made (Instant, Inliner)
	res             callResult
	resolve, reject func(any) error
}

type run struct {
	e        *Engine
	ctx      context.Context
	vm       *goja.Runtime
	br       Bridge
	lim      Limits
	seq      atomic.Uint64
	logs     []string
	out      int       // bytes of logs so far
	queue    []pending // the calls not settled, oldest first from head
	head     int
	lastReq  lastRequest // plainRequest's
	answer   lastAnswer  // fromJSON's
	mods     map[string]*goja.Object
	rng      *rand.Rand
	parse    goja.Callable
	strfy    goja.Callable
	replacer goja.Value
	notes    *valueNotes // set while the result is turned into JSON
	errCtr   goja.Value
	helpers  goja.Value

	calls sync.WaitGroup // driver calls in flight
	slots chan struct{}  // MaxInFlight tokens
	// work hands a call to an idle helper goroutine (goCall); done ends
	// the helpers, counted by helping, when the run ends.
	work    chan func()
	done    chan struct{}
	helping sync.WaitGroup
	timers  timers // setTimeout and setInterval

	stopOnce sync.Once
	stop     chan struct{}
	reason   atomic.Pointer[Error]
}

// Run executes job and returns its outcome. It never panics: a failure of the
// tool, a limit or agentos itself is an Outcome.Err.
func (e *Engine) Run(ctx context.Context, job Job, br Bridge) (out Outcome) {
	lim := job.Limits.WithDefaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := e.take()
	r := &run{e: e, ctx: ctx, vm: p.vm, br: br, lim: lim, mods: map[string]*goja.Object{}, stop: make(chan struct{}),
		parse: p.parse, strfy: p.strfy, replacer: p.replacer, errCtr: p.errCtr, helpers: p.helpers, slots: make(chan struct{}, MaxInFlight),
		work: make(chan func()), done: make(chan struct{})}
	// IMPORTANT: no call of this run outlives it: cancel what is still in
	// flight (a call the tool did not await) and wait for it, so that no
	// side effect or journal entry happens after the result is returned.
	defer func() {
		cancel()
		r.calls.Wait()
		close(r.done)
		r.helping.Wait()
	}()
	p.hooks.run = r
	p.cfg.Set("max", lim.MemoryBytes)
	if !slices.EqualFunc(p.bindings, job.Bindings, sameBinding) {
		installGlobals(p.vm, p.hooks, job.Bindings) // this job brings other bindings
		e.bindings.Store(&job.Bindings)
	}
	defer func() {
		if p := recover(); p != nil {
			out = Outcome{Logs: r.logs, Err: errorf(KindInternal, "the sandbox panicked: %s", describePanic(p)), Calls: r.seq.Load()}
		}
		if out.Logs == nil {
			out.Logs = []string{}
		}
		out.Err = clipError(out.Err)
	}()

	timer := time.AfterFunc(lim.Timeout, func() {
		r.abort(errorf(KindTimeout, "the tool ran longer than its %v limit and was stopped; look for an endless loop or raise the timeout", lim.Timeout))
	})
	defer timer.Stop()
	stopCtx := context.AfterFunc(ctx, func() {
		cause := context.Cause(ctx)
		if cause == nil || r.reason.Load() != nil {
			return
		}
		var reason *Error
		if errors.As(cause, &reason) { // the caller says why (a worker's parent: its deadline)
			r.abort(reason)
			return
		}
		r.abort(errorf(KindCancelled, "the run was cancelled by its caller: %v", cause))
	})
	defer stopCtx()
	stopWatch := r.watchMemory(job.HeapShared)
	defer stopWatch()

	if p.err != nil {
		return Outcome{Logs: []string{}, Err: errorf(KindInternal, "preparing the runtime: %v", p.err)}
	}
	res, err := r.protected(job)
	out.Calls = r.seq.Load()
	out.Logs = r.logs
	if err != nil {
		out.Err = r.classify(err)
		return out
	}
	out.Result = res
	return out
}

// goCall runs f on a helper goroutine of the run: an idle one, whose stack
// earlier calls already grew, or a new one. Helpers end with the run.
func (r *run) goCall(f func()) {
	select {
	case r.work <- f:
		return
	default:
	}
	r.helping.Add(1)
	go func() {
		defer r.helping.Done()
		for {
			f()
			select {
			case f = <-r.work:
			case <-r.done:
				return
			}
		}
	}()
}

// abort stops the run with reason; the first reason wins.
func (r *run) abort(reason *Error) {
	r.stopOnce.Do(func() {
		r.reason.Store(reason)
		r.vm.Interrupt(reason)
		close(r.stop)
		if a, ok := r.br.(Aborter); ok {
			a.Aborted(reason)
		}
	})
}

// protected runs main so that a throw, an interrupt or a stack overflow
// raised where Go code reads the tool's objects (module.exports, its default
// export: getters and Proxy traps the tool defined) is returned as an error,
// with the runtime's state unwound, rather than escaping as a panic.
func (r *run) protected(job Job) (res json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			switch x := p.(type) {
			case *goja.InterruptedError:
				res, err = nil, x
			case *goja.StackOverflowError:
				res, err = nil, x
			case *Error:
				res, err = nil, x
			default:
				panic(p)
			}
		}
	}()
	if ex := r.vm.Try(func() { res, err = r.main(job) }); ex != nil {
		return nil, ex
	}
	return res, err
}

// main calls the entry module's function with the job's arguments, lets
// what it returned settle, and returns the result as JSON.
func (r *run) main(job Job) (json.RawMessage, error) {
	vm := r.vm
	vm.SetMaxCallStackSize(r.lim.MaxCallDepth)
	vm.SetRandSource(r.random)
	vm.SetTimeSource(r.now)

	fn, err := r.entryFunction(job.Entry)
	if err != nil {
		return nil, err
	}
	args, err := r.args(job.Args)
	if err != nil {
		return nil, err
	}
	v, err := fn(goja.Undefined(), args)
	if err != nil {
		return nil, err
	}
	p, _ := v.Export().(*goja.Promise)
	if p != nil || r.pendingTimers() > 0 {
		if err := r.settle(p); err != nil {
			return nil, err
		}
		if p != nil {
			v = p.Result()
		}
	}
	return r.result(v)
}

// entryFunction loads the entry module and returns the function it
// exports: its default export, else module.exports itself.
func (r *run) entryFunction(entry Module) (goja.Callable, error) {
	exports, err := r.load(entry)
	if err != nil {
		return nil, err
	}
	def := exports.Get("default")
	if def == nil || goja.IsUndefined(def) {
		def = exports // module.exports = function (...) {...}
	}
	fn, ok := goja.AssertFunction(def)
	if !ok {
		return nil, errorf(KindNoExport, "%s has no default export function: write `export default function (args) { ... }`", entry.Path)
	}
	return fn, nil
}

// args parses the job's arguments as JSON.parse would; blank is {}.
func (r *run) args(text json.RawMessage) (goja.Value, error) {
	argsText := string(text)
	if strings.TrimSpace(argsText) == "" {
		argsText = "{}"
	}
	args, err := r.parse(nil, r.vm.ToValue(argsText))
	if err != nil {
		return nil, errorf(KindInvalidArgs, "args is not valid JSON: %v", err)
	}
	return args, nil
}

// settle runs the run's loop until p (nil: none) settles and no timer is
// left: timers due by the journaled clock fire first (see timers.go), then
// host calls complete in the order they were issued, each resolved on this
// goroutine, and when only timers are left the loop waits for the next.
func (r *run) settle(p *goja.Promise) error {
	for {
		if p != nil && p.State() == goja.PromiseStateRejected {
			return r.thrown(p.Result(), nil)
		}
		pending := p != nil && p.State() == goja.PromiseStatePending
		if !pending && r.pendingTimers() == 0 {
			return nil
		}
		if err := r.turn(); err != nil {
			return err
		}
	}
}

// turn runs one turn of settle's loop: a timer that is due fires, else the
// oldest host call completes, else the loop sleeps until the next timer.
// It fails when the run is stopped, or when nothing is left that could
// settle the tool's promise.
func (r *run) turn() error {
	select {
	case <-r.stop:
		return r.reason.Load()
	default:
	}
	if fired, err := r.fireDue(); err != nil || fired {
		return err
	}
	if r.head < len(r.queue) {
		return r.completeOldest()
	}
	if r.pendingTimers() > 0 {
		return r.sleepUntilNextTimer()
	}
	return errorf(KindUnsettled, "the tool's promise never settles: it awaits something no bridge call or timer will resolve")
}

// dequeue takes the oldest call not settled from the queue, whose array
// is reused once it is empty (no allocation per call).
func (r *run) dequeue() pending {
	pc := r.queue[r.head]
	r.queue[r.head] = pending{} // no reference kept to its promise
	if r.head++; r.head == len(r.queue) {
		r.queue, r.head = r.queue[:0], 0
	}
	return pc
}

// completeOldest waits for the answer to the oldest host call still
// queued and settles its promise on this goroutine. An abort answered by
// the host ends the run.
func (r *run) completeOldest() error {
	pc := r.dequeue()
	res := pc.res
	if pc.ch != nil {
		select {
		case res = <-pc.ch:
		case <-r.stop:
			return r.reason.Load()
		}
	}
	if res.err != nil {
		if e := driver.AsError(res.err); e.Code == driver.CodeAbort {
			return &Error{Kind: KindHostFailure, Message: e.Message, Code: driver.CodeAbort}
		}
		return pc.reject(r.jsError(res.err))
	}
	v, err := r.fromJSON(res.val)
	if err != nil {
		return pc.reject(r.jsError(err))
	}
	return pc.resolve(v)
}
