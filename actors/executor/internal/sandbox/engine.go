package sandbox

// The Engine: compiled programs cached by module, and a hardened runtime
// prepared ahead of each run.

import (
	"sync"
	"sync/atomic"

	"github.com/dop251/goja"

	"github.com/agentos-run/agentos/internal/lru"
	"github.com/agentos-run/agentos/transpile/helpersjs"
)

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
	// onPrewarm: take leaves the next spare to Prewarm (PrewarmAfterRuns).
	onPrewarm bool
}

// helpersJS is compiled once, on first use: see transpile.HelpersJS (helpersjs.JS).
var helpersJS = sync.OnceValue(func() *goja.Program {
	return goja.MustCompile("agentos:helpers", helpersjs.JS, true)
})

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

// prepare builds a runtime ready for a run, with the engine's bindings
// installed; p.err says why it could not.
func (e *Engine) prepare() *prepared {
	vm := goja.New()
	p := &prepared{vm: vm, cfg: vm.NewObject(), hooks: &hooks{}}
	p.cfg.Set("max", int64(1)<<62)
	p.cfg.Set("guard", e.guard)
	if err := p.boot(); err != nil {
		p.err = err
		return p
	}
	if b := e.bindings.Load(); b != nil {
		p.bindings = *b
	}
	installGlobals(vm, p.hooks, p.bindings)
	return p
}

// boot runs the bootstrap and helper programs in p's runtime and keeps
// what a run calls from Go: JSON.stringify, the guarded JSON.parse, Error
// and the replacer. The out-of-memory and note callbacks it installs reach
// the run that holds p through p.hooks.
func (p *prepared) boot() error {
	vm, h := p.vm, p.hooks
	oom := func(bytes int64, what string) {
		if h.run != nil {
			h.run.oom(bytes, what)
		}
	}
	boot, err := vm.RunProgram(bootstrapJS())
	if err != nil {
		return err
	}
	bootFn, _ := goja.AssertFunction(boot)
	if _, err := bootFn(nil, p.cfg, vm.ToValue(oom)); err != nil {
		return err
	}
	if p.helpers, err = vm.RunProgram(helpersJS()); err != nil {
		return err
	}
	jsonObj := vm.Get("JSON").ToObject(vm)
	p.strfy, _ = goja.AssertFunction(jsonObj.Get("stringify"))
	p.errCtr = vm.Get("Error")
	if p.parse, err = guardJSONParse(vm, jsonObj); err != nil {
		return err
	}
	mk, err := vm.RunProgram(replacerJS())
	if err != nil {
		return err
	}
	mkFn, _ := goja.AssertFunction(mk)
	note := func(kind, path, text string) {
		if h.run != nil && h.run.notes != nil {
			h.run.notes.add(kind, path, text)
		}
	}
	p.replacer, err = mkFn(nil, vm.ToValue(note))
	return err
}

// take returns the spare runtime (waiting for the one being prepared, if
// any, rather than preparing a second) and starts preparing the next spare
// in the background (unless PrewarmAfterRuns: then the caller's next
// Prewarm does). Each run thus costs one preparation, mostly overlapped
// with the previous run or with the wait for the next.
func (e *Engine) take() *prepared {
	e.mu.Lock()
	for e.spare == nil && e.filling {
		e.cond.Wait()
	}
	p := e.spare
	e.spare = nil
	refill := !e.onPrewarm
	e.filling = refill
	e.mu.Unlock()
	if refill {
		go e.fill()
	}
	if p == nil {
		p = e.prepare()
	}
	return p
}

// PrewarmAfterRuns makes a run leave the preparation of the next runtime
// to the caller's next Prewarm, instead of starting it as the run starts,
// where it competes with the run for the CPU. A sandbox worker, which runs
// one job at a time and then waits for the next, calls Prewarm once each
// run's outcome is sent. A run that starts while the preparation is under
// way waits for it (at most one preparation, about 0.1 ms); one that starts
// with none ready or under way prepares its own.
func (e *Engine) PrewarmAfterRuns() {
	e.mu.Lock()
	e.onPrewarm = true
	e.mu.Unlock()
}

// NewEngine returns an Engine caching at most max compiled programs
// (max < 1 means 1024). guardAllocations turns on the bootstrap's guards
// against single huge allocations: set it when the runtime shares the host's
// process (no RLIMIT_AS behind it). It bounds regexp backtracking
// process-wide first (BoundRegexpBacktracking).
func NewEngine(max int, guardAllocations bool) *Engine {
	BoundRegexpBacktracking() // process-wide: see its doc
	if max < 1 {
		max = 1024
	}
	e := &Engine{programs: lru.New[string, *goja.Program](max), guard: guardAllocations}
	e.cond = sync.NewCond(&e.mu)
	return e
}

// fill prepares the spare runtime; the caller set e.filling.
func (e *Engine) fill() {
	next := e.prepare()
	e.mu.Lock()
	e.spare, e.filling = next, false
	e.cond.Broadcast()
	e.mu.Unlock()
}

// Prewarm starts preparing the first run's runtime in the background
// (compiling the bootstrap, helper and replacer scripts on the way), so that
// a process which starts an Engine before its first run has, such as a
// sandbox worker waiting for its first job, pays little of that cost in the
// run. The first run waits for this preparation instead of starting another.
// Calling it when a runtime is ready or being prepared does nothing.
func (e *Engine) Prewarm() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.spare != nil || e.filling {
		return
	}
	e.filling = true
	go e.fill()
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
