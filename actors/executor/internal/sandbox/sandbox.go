// Package sandbox runs one tool in a fresh goja runtime: the harness shared by
// the executor's in-process mode and its worker processes.
//
// A run gets a new runtime (no state leaks between tools), hardened by a
// bootstrap (no eval/Function constructors, guarded big allocations), a `tgp`
// object whose functions become driver.Calls on the caller's Bridge, a
// CommonJS `require` that loads other tools through the Bridge, a `console`
// whose output is collected as logs, Math.random seeded from the "random"
// device and Date read from the "clock" device. Data crosses the boundary only
// as JSON text: Go values are never reflected into the runtime.
//
// # Limits
//
// Wall time (Interrupt at the deadline), call-stack depth, output size (result
// plus logs), and memory: the guarded built-ins refuse single huge
// allocations, and a watchdog samples the Go heap and interrupts a run that
// grows past its limit. None of this survives a native built-in that runs
// for seconds or one allocation the guards miss: that is what the worker
// process (RLIMIT_AS, SIGKILL) is for.
package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentos-run/agentos/internal/clip"
	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/internal/lru"
	"github.com/agentos-run/agentos/transpile"
)

// RegexpTimeout bounds one regular-expression match in the backtracking
// engine goja uses for patterns Go's linear-time engine cannot run.
const RegexpTimeout = 250 * time.Millisecond

func init() {
	// IMPORTANT: this is process-wide; it bounds catastrophic backtracking
	// (e.g. /^(a+)+$/ on a long near-match) for every runtime.
	regexp2.DefaultMatchTimeout = RegexpTimeout
}

// MaxInFlight bounds the driver calls one run can have in flight; a tool that
// issues more without awaiting them waits for a slot. IMPORTANT: without it
// an untrusted tool could start unbounded I/O in the host.
const MaxInFlight = 64

// Limits bound one run. Zero fields mean the defaults of DefaultLimits.
type Limits struct {
	Timeout        time.Duration `json:"timeout"`
	MemoryBytes    int64         `json:"memory_bytes"`
	MaxCallDepth   int           `json:"max_call_depth"`
	MaxOutputBytes int           `json:"max_output_bytes"`
}

// DefaultLimits are the limits of a run that sets none.
var DefaultLimits = Limits{
	Timeout:        5 * time.Second,
	MemoryBytes:    256 << 20,
	MaxCallDepth:   1000,
	MaxOutputBytes: 1 << 20,
}

// WithDefaults fills zero fields from DefaultLimits.
func (l Limits) WithDefaults() Limits { return l.Or(DefaultLimits) }

// Or fills the zero (or negative) fields of l from def.
func (l Limits) Or(def Limits) Limits {
	if l.Timeout <= 0 {
		l.Timeout = def.Timeout
	}
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = def.MemoryBytes
	}
	if l.MaxCallDepth <= 0 {
		l.MaxCallDepth = def.MaxCallDepth
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = def.MaxOutputBytes
	}
	return l
}

// Module is a transpiled tool module.
type Module struct {
	Path string `json:"path"` // tool-root-relative, e.g. tools/math/fib.ts
	Hash string `json:"hash"` // content hash of the TypeScript source
	JS   string `json:"js"`   // the wrapped CommonJS function expression
}

// Binding exposes one driver operation as tgp.<Name>(...): the positional
// arguments become the fields Params of the request object.
type Binding struct {
	Name   string   `json:"name"`
	Driver string   `json:"driver"`
	Op     string   `json:"op"`
	Params []string `json:"params"`
}

// DefaultBindings are the file functions every tool has.
var DefaultBindings = []Binding{
	{Name: "read_file", Driver: driver.FSDriver, Op: "read_file", Params: []string{"path"}},
	{Name: "write_file", Driver: driver.FSDriver, Op: "write_file", Params: []string{"path", "content"}},
	{Name: "list_files", Driver: driver.FSDriver, Op: "list_files", Params: []string{"dir"}},
}

// Bridge is how a run reaches outside the runtime.
type Bridge interface {
	// Do answers a driver call. It MAY be called from any goroutine.
	Do(ctx context.Context, c driver.Call) (json.RawMessage, error)
	// Require resolves spec as required from the module at path from and
	// returns the module transpiled. It is called on the run's goroutine.
	Require(ctx context.Context, from, spec string) (Module, error)
}

// Job is one run.
type Job struct {
	Entry    Module          `json:"entry"`
	Args     json.RawMessage `json:"args"`
	Limits   Limits          `json:"limits"`
	Bindings []Binding       `json:"bindings"`
	// HeapShared says other work shares this process's heap (in-process
	// mode): the memory watchdog then measures growth since the run started.
	HeapShared bool `json:"-"`
}

// Outcome is what a run produced.
type Outcome struct {
	Result json.RawMessage `json:"result,omitempty"`
	Logs   []string        `json:"logs"`
	Err    *Error          `json:"error,omitempty"`
	Calls  uint64          `json:"calls"`
}

// Engine runs jobs and caches compiled programs by module. It is safe for
// concurrent use; each run gets its own runtime.
//
// Hardening a fresh goja runtime costs a few hundred microseconds (goja
// builds its built-ins lazily, and the bootstrap touches many of them), so
// the Engine keeps one hardened runtime ready, prepared in the background
// while the previous run executes. IMPORTANT: a runtime serves exactly one
// run and is then dropped; "ready" never means "reused".
type Engine struct {
	programs *lru.Cache[string, *goja.Program]
	guard    bool

	bindings atomic.Pointer[[]Binding] // the last job's, to prepare with

	mu      sync.Mutex
	cond    *sync.Cond
	spare   *prepared // the next run's runtime, if ready
	filling bool      // a goroutine is preparing the spare
}

// helpersJS is compiled once: see transpile.HelpersJS.
var helpersJS = goja.MustCompile("agentos:helpers", transpile.HelpersJS, true)

// prepared is a fresh, hardened runtime not yet used by any run.
type prepared struct {
	vm      *goja.Runtime
	helpers goja.Value   // the esbuild interop helpers every module receives
	cfg     *goja.Object // the bootstrap's config (cfg.max)
	// bindings are the tgp functions installed (nil: DefaultBindings)
	bindings []Binding
	hooks    *hooks
	parse    goja.Callable
	strfy    goja.Callable
	replacer goja.Value // see values.go
	errCtr   goja.Value
	err      error
}

// hooks routes the callbacks installed while preparing a runtime (the
// bootstrap's oom, the tgp and console functions) to the run that takes it.
type hooks struct {
	run *run
}

func (e *Engine) prepare() *prepared {
	vm := goja.New()
	p := &prepared{vm: vm, cfg: vm.NewObject(), hooks: &hooks{}}
	p.cfg.Set("max", int64(1)<<62)
	p.cfg.Set("guard", e.guard)
	h := p.hooks
	oom := func(bytes int64, what string) {
		if h.run != nil {
			h.run.oom(bytes, what)
		}
	}
	boot, err := vm.RunProgram(bootstrapJS)
	if err != nil {
		p.err = err
		return p
	}
	bootFn, _ := goja.AssertFunction(boot)
	if _, err := bootFn(nil, p.cfg, vm.ToValue(oom)); err != nil {
		p.err = err
		return p
	}
	if p.helpers, err = vm.RunProgram(helpersJS); err != nil {
		p.err = err
		return p
	}
	jsonObj := vm.Get("JSON").ToObject(vm)
	p.strfy, _ = goja.AssertFunction(jsonObj.Get("stringify"))
	p.errCtr = vm.Get("Error")
	if p.parse, err = guardJSONParse(vm, jsonObj); err != nil {
		p.err = err
		return p
	}
	mk, err := vm.RunProgram(replacerJS)
	if err != nil {
		p.err = err
		return p
	}
	mkFn, _ := goja.AssertFunction(mk)
	note := func(kind, path, text string) {
		if h.run != nil && h.run.notes != nil {
			h.run.notes.add(kind, path, text)
		}
	}
	if p.replacer, err = mkFn(nil, vm.ToValue(note)); err != nil {
		p.err = err
		return p
	}
	if b := e.bindings.Load(); b != nil {
		p.bindings = *b
	}
	installGlobals(vm, h, p.bindings)
	return p
}

// take returns the spare runtime (waiting for the one being prepared, if
// any, rather than preparing a second) and starts preparing the next spare
// in the background. Each run thus costs one preparation, mostly overlapped
// with the previous run.
func (e *Engine) take() *prepared {
	e.mu.Lock()
	for e.spare == nil && e.filling {
		e.cond.Wait()
	}
	p := e.spare
	e.spare = nil
	e.filling = true
	e.mu.Unlock()
	go func() {
		next := e.prepare()
		e.mu.Lock()
		e.spare, e.filling = next, false
		e.cond.Broadcast()
		e.mu.Unlock()
	}()
	if p == nil {
		p = e.prepare()
	}
	return p
}

// NewEngine returns an Engine caching at most max compiled programs
// (max < 1 means 1024). guardAllocations turns on the bootstrap's guards
// against single huge allocations: set it when the runtime shares the host's
// process (no RLIMIT_AS behind it).
func NewEngine(max int, guardAllocations bool) *Engine {
	if max < 1 {
		max = 1024
	}
	e := &Engine{programs: lru.New[string, *goja.Program](max), guard: guardAllocations}
	e.cond = sync.NewCond(&e.mu)
	return e
}

func (e *Engine) program(m Module) (*goja.Program, error) {
	key := m.Path + "\x00" + m.Hash
	if p, ok := e.programs.Get(key); ok {
		return p, nil
	}
	p, err := goja.Compile(m.Path, m.JS, false)
	if err != nil {
		return nil, err
	}
	e.programs.Add(key, p)
	return p, nil
}

type callResult struct {
	val json.RawMessage
	err error
}

type pending struct {
	ch              chan callResult
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
	out      int // bytes of logs so far
	queue    []*pending
	mods     map[string]*goja.Object
	rng      *rand.Rand
	parse    goja.Callable
	strfy    goja.Callable
	replacer goja.Value
	notes    *valueNotes // set while the result is turned into JSON
	errCtr   goja.Value
	helpers  goja.Value

	calls  sync.WaitGroup // driver calls in flight
	slots  chan struct{}  // MaxInFlight tokens
	timers timers         // setTimeout and setInterval

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
		parse: p.parse, strfy: p.strfy, replacer: p.replacer, errCtr: p.errCtr, helpers: p.helpers, slots: make(chan struct{}, MaxInFlight)}
	// IMPORTANT: no call of this run outlives it: cancel what is still in
	// flight (a call the tool did not await) and wait for it, so that no
	// side effect or journal entry happens after the result is returned.
	defer func() {
		cancel()
		r.calls.Wait()
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

// Aborter is implemented by a Bridge that must know at once when its run is
// stopped (deadline, memory, output, cancellation), before the run has
// unwound: a worker tells its parent, which then knows why the run is ending
// even if a native built-in that ignores the interrupt keeps it from ending.
type Aborter interface {
	// Aborted is called, from any goroutine, with the reason the run is
	// being stopped; a second time, with a memory_limit reason, if a run
	// stopped for another reason then grows past its memory limit (a native
	// built-in ignoring the interrupt). It MUST NOT block for long.
	Aborted(reason *Error)
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

func (r *run) main(job Job) (json.RawMessage, error) {
	vm := r.vm
	vm.SetMaxCallStackSize(r.lim.MaxCallDepth)
	vm.SetRandSource(r.random)
	vm.SetTimeSource(r.now)

	exports, err := r.load(job.Entry)
	if err != nil {
		return nil, err
	}
	def := exports.Get("default")
	if def == nil || goja.IsUndefined(def) {
		def = exports // module.exports = function (...) {...}
	}
	fn, ok := goja.AssertFunction(def)
	if !ok {
		return nil, errorf(KindNoExport, "%s has no default export function: write `export default function (args) { ... }`", job.Entry.Path)
	}
	argsText := string(job.Args)
	if strings.TrimSpace(argsText) == "" {
		argsText = "{}"
	}
	args, err := r.parse(nil, vm.ToValue(argsText))
	if err != nil {
		return nil, errorf(KindInvalidArgs, "args is not valid JSON: %v", err)
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
		select {
		case <-r.stop:
			return r.reason.Load()
		default:
		}
		if fired, err := r.fireDue(); err != nil {
			return err
		} else if fired {
			continue
		}
		if len(r.queue) == 0 {
			if r.pendingTimers() > 0 {
				if err := r.sleepUntilNextTimer(); err != nil {
					return err
				}
				continue
			}
			return errorf(KindUnsettled, "the tool's promise never settles: it awaits something no bridge call or timer will resolve")
		}
		pc := r.queue[0]
		r.queue = r.queue[1:]
		var res callResult
		select {
		case res = <-pc.ch:
		case <-r.stop:
			return r.reason.Load()
		}
		var err error
		if res.err != nil && driver.AsError(res.err).Code == driver.CodeAbort {
			return &Error{Kind: KindHostFailure, Message: driver.AsError(res.err).Message, Code: driver.CodeAbort}
		} else if res.err != nil {
			err = pc.reject(r.jsError(res.err))
		} else if v, perr := r.fromJSON(res.val); perr != nil {
			err = pc.reject(r.jsError(perr))
		} else {
			err = pc.resolve(v)
		}
		if err != nil {
			return err
		}
	}
}

func (r *run) result(v goja.Value) (json.RawMessage, error) {
	if v == nil || goja.IsUndefined(v) {
		return json.RawMessage("null"), nil
	}
	if _, isObj := v.(*goja.Object); !isObj {
		// A primitive: decided here, without the replacer.
		switch x := v.Export().(type) {
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				w := fmt.Sprintf("warn: result is %s, which JSON cannot hold: it was returned as null", v.String())
				r.out += len(w)
				r.logs = append(r.logs, w)
				return json.RawMessage("null"), nil
			}
		case *big.Int:
			return nil, &Error{Kind: KindException, Message: "the tool's result cannot be turned into JSON: TypeError: result: the BigInt " + x.String() + "n has no JSON form: return Number(n) when it is exact as a number (|n| <= 2^53), or String(n)"}
		}
		if _, isSym := v.(*goja.Symbol); isSym {
			return nil, &Error{Kind: KindException, Message: "the tool's result cannot be turned into JSON: TypeError: result: the tool returned a symbol, which has no JSON form: return data (an object, array, string, number, boolean or null)"}
		}
	}
	r.notes = &valueNotes{}
	s, err := r.strfy(nil, v, r.replacer)
	notes := r.notes
	r.notes = nil
	if err != nil {
		var ex *goja.Exception
		if errors.As(err, &ex) {
			var msg string
			if derr := r.safely(func() { msg = ex.Value().String() }); derr != nil {
				msg = plain(ex.Value())
			}
			return nil, &Error{Kind: KindException, Message: "the tool's result cannot be turned into JSON: " + msg}
		}
		return nil, err
	}
	for _, w := range notes.warnings() {
		r.out += len(w)
		r.logs = append(r.logs, w)
	}
	if goja.IsUndefined(s) {
		return json.RawMessage("null"), nil
	}
	text := s.String()
	if r.out+len(text) > r.lim.MaxOutputBytes {
		return nil, errorf(KindOutput, "the result (%d bytes) and logs (%d bytes) exceed the %d-byte output limit: return less, or write large output to a file", len(text), r.out, r.lim.MaxOutputBytes)
	}
	return json.RawMessage(text), nil
}

// load runs a module (once per run) and returns its exports object.
func (r *run) load(m Module) (*goja.Object, error) {
	if mod, ok := r.mods[m.Path]; ok {
		return mod.Get("exports").ToObject(r.vm), nil
	}
	prog, err := r.e.program(m)
	if err != nil {
		return nil, errorf(KindCompile, "%s: %v", m.Path, err)
	}
	vm := r.vm
	module := vm.NewObject()
	exports := vm.NewObject()
	module.Set("exports", exports)
	r.mods[m.Path] = module // before running: cycles see the partial exports
	wrapper, err := vm.RunProgram(prog)
	if err != nil {
		delete(r.mods, m.Path)
		return nil, err
	}
	fn, ok := goja.AssertFunction(wrapper)
	if !ok {
		return nil, errorf(KindInternal, "%s: transpiled module is not a function", m.Path)
	}
	dir := m.Path[:max(strings.LastIndexByte(m.Path, '/'), 0)]
	if _, err := fn(goja.Undefined(), exports, vm.ToValue(r.requireFrom(m.Path)), module, vm.ToValue(m.Path), vm.ToValue(dir), r.helpers); err != nil {
		delete(r.mods, m.Path) // a retried require must not get half-run exports
		return nil, err
	}
	return module.Get("exports").ToObject(vm), nil
}

func (r *run) requireFrom(from string) func(goja.FunctionCall) goja.Value {
	return func(c goja.FunctionCall) goja.Value {
		spec, ok := c.Argument(0).Export().(string)
		if !ok {
			panic(r.throw("invalid_argument", "require(id): id must be a string literal path like './lib/math'"))
		}
		m, err := r.br.Require(r.ctx, from, spec)
		if err != nil {
			panic(r.jsError(err))
		}
		exports, err := r.load(m)
		if err != nil {
			panic(r.rethrow(err))
		}
		return exports
	}
}

// rethrow turns an error from a nested load into a value to panic with, so
// a tool can catch a failed require, while uncatchable errors stay so.
func (r *run) rethrow(err error) any {
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return ex
	}
	var e *Error
	if errors.As(err, &e) {
		return r.throw(string(e.Kind), e.Message)
	}
	return err
}

// installGlobals defines tgp and console on vm; their functions act on the
// run that h points at when they are called.
func installGlobals(vm *goja.Runtime, h *hooks, bindings []Binding) {
	tgp := vm.NewObject()
	if bindings == nil {
		bindings = DefaultBindings
	}
	for _, b := range bindings {
		tgp.Set(b.Name, func(c goja.FunctionCall) goja.Value { return h.run.callBinding(b, c) })
	}
	logFn := func(prefix string) func(goja.FunctionCall) goja.Value {
		return func(c goja.FunctionCall) goja.Value { return h.run.log(prefix, c) }
	}
	tgp.Set("log", logFn(""))
	vm.Set("tgp", tgp)
	vm.Set("setTimeout", func(c goja.FunctionCall) goja.Value { return h.run.setTimer(c, false) })
	vm.Set("setInterval", func(c goja.FunctionCall) goja.Value { return h.run.setTimer(c, true) })
	vm.Set("clearTimeout", func(c goja.FunctionCall) goja.Value { return h.run.clearTimer(c) })
	vm.Set("clearInterval", func(c goja.FunctionCall) goja.Value { return h.run.clearTimer(c) })
	console := vm.NewObject()
	for _, lvl := range []string{"log", "info", "debug"} {
		console.Set(lvl, logFn(""))
	}
	console.Set("warn", logFn("warn: "))
	console.Set("error", logFn("error: "))
	vm.Set("console", console)
}

func sameBinding(a, b Binding) bool {
	return a.Name == b.Name && a.Driver == b.Driver && a.Op == b.Op && slices.Equal(a.Params, b.Params)
}

// callBinding is tgp.<name>: positional args -> request object -> Call,
// answered asynchronously through a promise.
func (r *run) callBinding(b Binding, c goja.FunctionCall) goja.Value {
	req := r.vm.NewObject()
	for i, name := range b.Params {
		if a := c.Argument(i); !goja.IsUndefined(a) {
			req.Set(name, a)
		}
	}
	s, err := r.strfy(nil, req)
	if err != nil {
		panic(r.throw(driver.CodeInvalid, fmt.Sprintf("tgp.%s: arguments are not JSON-serializable: %v", b.Name, err)))
	}
	select {
	case r.slots <- struct{}{}:
	case <-r.stop:
		return goja.Undefined() // the run is being stopped; the interrupt follows
	}
	call := driver.Call{Seq: r.seq.Add(1), Driver: b.Driver, Op: b.Op, Request: json.RawMessage(s.String())}
	p, resolve, reject := r.vm.NewPromise()
	pc := &pending{ch: make(chan callResult, 1), resolve: resolve, reject: reject}
	r.queue = append(r.queue, pc)
	r.calls.Add(1)
	go func() {
		defer r.calls.Done()
		val, err := r.do(call)
		<-r.slots
		pc.ch <- callResult{val, err}
	}()
	return r.vm.ToValue(p)
}

// do calls the bridge, turning a panic in a Host into an error.
func (r *run) do(c driver.Call) (val json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = driver.Errorf(driver.CodeIO, "%s: the driver panicked: %v", c, p)
		}
	}()
	return r.br.Do(r.ctx, c)
}

// syncCall makes a call that must answer before the runtime continues
// (clock, random seed). A failure aborts the run: the tool cannot catch it.
func (r *run) syncCall(drv, op string) json.RawMessage {
	val, err := r.do(driver.Call{Seq: r.seq.Add(1), Driver: drv, Op: op})
	if err != nil {
		r.abort(&Error{Kind: KindHostFailure, Message: fmt.Sprintf("%s.%s: %v", drv, op, err), Code: driver.AsError(err).Code})
		return nil
	}
	return val
}

func (r *run) now() time.Time {
	var ms int64
	if val := r.syncCall(driver.ClockDriver, "now"); val != nil {
		if err := json.Unmarshal(val, &ms); err != nil {
			r.abort(errorf(KindHostFailure, "clock.now answered %s, not Unix milliseconds", val))
		}
	}
	r.timers.now, r.timers.haveNow = max(ms, r.timers.now), true
	return time.UnixMilli(ms).UTC()
}

func (r *run) random() float64 {
	if r.rng == nil {
		var seed uint64
		if val := r.syncCall(driver.RandomDriver, "seed"); val != nil {
			if err := json.Unmarshal(val, &seed); err != nil {
				r.abort(errorf(KindHostFailure, "random.seed answered %s, not a 64-bit seed", val))
			}
		}
		r.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	}
	return r.rng.Float64()
}

// log is tgp.log and console.*: one line of the run's logs.
func (r *run) log(prefix string, c goja.FunctionCall) goja.Value {
	parts := make([]string, len(c.Arguments))
	for i, a := range c.Arguments {
		parts[i] = r.format(a)
	}
	line := prefix + strings.Join(parts, " ")
	r.out += len(line)
	if r.out > r.lim.MaxOutputBytes {
		r.abort(errorf(KindOutput, "the tool logged more than its %d-byte output limit: log less", r.lim.MaxOutputBytes))
		return goja.Undefined()
	}
	r.logs = append(r.logs, line)
	return goja.Undefined()
}

func (r *run) format(v goja.Value) string {
	if s, ok := v.Export().(string); ok {
		return s
	}
	if _, isSym := v.(*goja.Symbol); isSym {
		return primitiveText(v)
	}
	if _, isObj := v.(*goja.Object); !isObj {
		return v.String() // NaN, Infinity, 10 (a BigInt), undefined, null, true
	}
	if _, isFn := goja.AssertFunction(v); !isFn {
		if s, err := r.strfy(nil, v, r.replacer); err == nil && !goja.IsUndefined(s) {
			return s.String()
		}
	}
	return v.String()
}

func (r *run) oom(bytes int64, what string) {
	r.abort(errorf(KindMemory, "%s would allocate %d bytes, over the run's %d-byte memory limit", what, bytes, r.lim.MemoryBytes))
}

// watchMemory samples the Go heap every millisecond and stops the run when
// it exceeds the limit (growth since the start when the heap is shared).
//
// It trips only when both figures exceed the limit: the heap's objects
// (current, but garbage counts until it is collected) and the live heap
// (garbage-free, but only as of the last GC, whose cycle may span two runs).
// A bomb grows both; garbage churn or a GC cycle that started in another run
// grows only one. RLIMIT_AS backs this up in workers.
func (r *run) watchMemory(shared bool) (stop func()) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	read := func() (objects, live int64) {
		metrics.Read(sample)
		return int64(sample[0].Value.Uint64()), int64(sample[1].Value.Uint64())
	}
	var baseObjects, baseLive int64
	if shared {
		baseObjects, baseLive = read()
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				objects, live := read()
				if objects-baseObjects > r.lim.MemoryBytes && live-baseLive > r.lim.MemoryBytes {
					over := errorf(KindMemory, "the run's heap grew to %d bytes (%d live), over its %d-byte memory limit", objects-baseObjects, live-baseLive, r.lim.MemoryBytes)
					if r.reason.Load() == nil {
						r.abort(over)
						return
					}
					// Stopped already (its deadline), but a native built-in
					// that ignores the interrupt is still allocating: a
					// memory bomb. The Bridge hears of it (a worker's parent
					// then reports memory_limit, not timeout).
					if a, ok := r.br.(Aborter); ok && r.reason.Load().Kind != KindMemory {
						a.Aborted(over)
					}
					return
				}
			}
		}
	}()
	return func() { close(done) }
}

// fromJSON turns JSON text into a runtime value.
func (r *run) fromJSON(val json.RawMessage) (goja.Value, error) {
	if len(val) == 0 {
		return goja.Undefined(), nil
	}
	return r.parse(nil, r.vm.ToValue(string(val)))
}

// throw builds a JS Error with a code, to panic with from a Go function.
func (r *run) throw(code, msg string) *goja.Object {
	obj, err := r.vm.New(r.errCtr, r.vm.ToValue(msg))
	if err != nil {
		return r.vm.NewTypeError(msg)
	}
	obj.Set("code", code)
	return obj
}

func (r *run) jsError(err error) *goja.Object {
	e := driver.AsError(err)
	return r.throw(e.Code, e.Message)
}

// classify turns what the runtime returned into an *Error.
//
// IMPORTANT: it never formats a goja.Exception with Error or String, and
// looks at the error's own type before any errors.As/Is: those would run the
// tool's code (a toString, a getter, a Proxy trap on the thrown value) with
// no bound, outside the run.
func (r *run) classify(err error) *Error {
	reason := r.reason.Load()
	switch x := err.(type) {
	case *goja.InterruptedError:
		if reason != nil {
			e := *reason
			e.Stack = x.String()
			r.timersNote(&e)
			return &e
		}
		return errorf(KindInternal, "interrupted: %v", x.Value())
	case *goja.StackOverflowError:
		return &Error{Kind: KindStack, Message: fmt.Sprintf("the call stack grew past %d frames: look for runaway recursion", r.lim.MaxCallDepth), Stack: x.String()}
	case *goja.Exception:
		return r.thrown(x.Value(), x.Stack())
	case *Error:
		if reason != nil && x == reason {
			e := *reason
			r.timersNote(&e)
			return &e
		}
		return x
	}
	if reason != nil {
		var ie *goja.InterruptedError
		if errors.As(err, &ie) || errors.Is(err, reason) {
			e := *reason
			if ie != nil {
				e.Stack = ie.String()
			}
			return &e
		}
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		return &Error{Kind: KindStack, Message: fmt.Sprintf("the call stack grew past %d frames: look for runaway recursion", r.lim.MaxCallDepth), Stack: so.String()}
	}
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		return errorf(KindInternal, "interrupted: %v", ie.Value())
	}
	var ce *goja.CompilerSyntaxError
	if errors.As(err, &ce) {
		return errorf(KindCompile, "%v", ce)
	}
	return errorf(KindInternal, "%v", err)
}

// maxThrownText bounds the message and the stack of a thrown value as
// reported: a tool can throw a string of hundreds of megabytes.
const maxThrownText = 64 << 10

// thrown describes a value the tool threw (or rejected with) and did not
// catch: "Name: message", the driver code if it has one, and the stack
// (frames, when the runtime captured them, else the value's own stack).
//
// Reading name, message, code or stack may run the tool's code (getters,
// toString, Proxy traps): each read is bounded (see safely), and a read
// that throws, loops or overflows is reported as part of the tool's error.
func (r *run) thrown(v goja.Value, frames []goja.StackFrame) *Error {
	out := &Error{Kind: KindException, Message: "undefined"}
	defer func() {
		out.Message = clip.N(out.Message, maxThrownText)
		out.Stack = clip.N(out.Stack, maxThrownText)
	}()
	withFrames := func() {
		if len(frames) > 0 {
			var b strings.Builder
			b.WriteString(out.Message)
			b.WriteByte('\n')
			for _, f := range frames {
				var fb bytes.Buffer
				f.Write(&fb)
				b.WriteString("\tat ")
				b.Write(fb.Bytes())
				b.WriteByte('\n')
			}
			out.Stack = b.String()
		}
	}
	if v == nil {
		withFrames()
		return out
	}
	obj, ok := v.(*goja.Object)
	if !ok {
		out.Message = "the tool threw a non-Error value: " + primitiveText(v) // no tool code runs
		withFrames()
		return out
	}
	str := func(name string) (string, error) {
		var s string
		err := r.safely(func() {
			if x := obj.Get(name); x != nil && !goja.IsUndefined(x) && !goja.IsNull(x) {
				s = x.String()
			}
		})
		return s, err
	}
	name, err := str("name")
	if err != nil {
		out.Message = fmt.Sprintf("the tool threw %s whose name could not be read: %v", plain(v), err)
		withFrames()
		return out
	}
	msg, err := str("message")
	if err != nil {
		out.Message = fmt.Sprintf("the tool threw %s whose message could not be read: %v", plain(v), err)
		withFrames()
		return out
	}
	if msg != "" || name != "" {
		out.Message = strings.TrimPrefix(name+": "+msg, ": ")
	} else if err := r.safely(func() { out.Message = v.String() }); err != nil {
		out.Message = fmt.Sprintf("the tool threw %s that could not be turned into text: %v", plain(v), err)
	} else if strings.HasPrefix(out.Message, "[object ") || obj.ClassName() == "Array" {
		// throw {code: "E_BAD"}: its own toString says nothing ("[object
		// Object]"), its JSON says what the tool meant.
		var text string
		if err := r.safely(func() {
			if s, err := r.strfy(nil, v); err == nil && !goja.IsUndefined(s) {
				text = s.String()
			}
		}); err == nil && text != "" && (text != "{}" || out.Message == "[object Object]") {
			out.Message = "the tool threw a non-Error value: " + text
		}
	}
	withFrames()
	out.Code, _ = str("code")
	if st, err := str("stack"); err == nil && st != "" && (out.Stack == "" || !strings.Contains(out.Stack, "at ")) {
		out.Stack = st
	}
	return out
}

// primitiveText writes a thrown primitive as JSON where JSON can say it
// (a string quoted, null, a number, true/false) and as JavaScript writes it
// otherwise (undefined, NaN, Infinity, 5n, Symbol(x)). It runs no tool code.
func primitiveText(v goja.Value) string {
	if sym, ok := v.(*goja.Symbol); ok {
		return "Symbol(" + sym.String() + ")" // String and Export give only its description
	}
	switch x := v.Export().(type) {
	case string:
		b, _ := json.Marshal(clip.N(x, maxThrownText))
		return string(b)
	case nil:
		if goja.IsNull(v) {
			return "null"
		}
		return "undefined"
	case *big.Int:
		return x.String() + "n"
	}
	return v.String()
}

// describeBudget bounds the tool code that describing a thrown value may run
// (a getter on message, a toString). IMPORTANT: the run's own deadline may
// have passed already, so nothing else would stop a getter that loops.
const describeBudget = 250 * time.Millisecond

// errDescribeBudget interrupts the tool code run by safely.
var errDescribeBudget = fmt.Errorf("it ran longer than %v and was stopped", describeBudget)

// safely runs f, which may run the tool's code, for at most describeBudget.
// A throw, an interrupt or a stack overflow in it is returned as an error
// whose text runs no tool code.
func (r *run) safely(f func()) (err error) {
	fired := make(chan struct{})
	t := time.AfterFunc(describeBudget, func() {
		r.vm.Interrupt(errDescribeBudget)
		close(fired)
	})
	defer func() {
		if !t.Stop() {
			<-fired
			r.vm.ClearInterrupt() // had it not reached the tool's code, it must not stop the next read
		}
	}()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s", describePanic(p))
		}
	}()
	if ex := r.vm.Try(f); ex != nil {
		return fmt.Errorf("it threw %s", plain(ex.Value()))
	}
	return nil
}

// describePanic describes what a goja call panicked with without running
// any tool code (never Exception.Error, which calls the value's toString).
func describePanic(p any) string {
	switch x := p.(type) {
	case *goja.InterruptedError:
		if e, ok := x.Value().(error); ok {
			return e.Error()
		}
		return "it was interrupted"
	case *goja.StackOverflowError:
		return "it overflowed the call stack"
	case *goja.Exception:
		return "it threw " + plain(x.Value())
	case *Error:
		return x.Error()
	case goja.Value:
		return "it threw " + plain(x)
	case error:
		return x.Error()
	}
	return fmt.Sprint(p)
}

// plain names v without running any tool code: a primitive as its text, an
// object by its class.
func plain(v goja.Value) string {
	if v == nil {
		return "undefined"
	}
	if o, ok := v.(*goja.Object); ok {
		return "an object of class " + o.ClassName()
	}
	return clip.N(v.String(), 200)
}
