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
// process (RLIMIT_AS, SIGKILL) is for. Regular-expression backtracking is
// bounded by a process-wide regexp2 setting that NewEngine makes
// (BoundRegexpBacktracking).
//
// # Files
//
// sandbox.go: the API types (Limits, Module, Binding, Bridge, Job,
// Outcome); engine.go: Engine and runtime preparation; run.go: one run;
// modules.go: require; host.go: bindings, console, driver calls; memory.go:
// the memory limit; result.go: JSON in and out; thrown.go: failures;
// regexp.go: the regexp bound; bootstrap.go, guards.go, timers.go,
// values.go: the hardening, allocation guards, timers and value notes.
package sandbox

// The API types of a run.

import (
	"context"
	"encoding/json"
	"time"

	driver "github.com/agentos-run/agentos/driver/driverbase"
)

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

// Starter is a Bridge that can start a call without a goroutine waiting
// on it (a worker's link to its parent): the run then hands no call to a
// helper goroutine, and the answer comes straight from whoever has it.
type Starter interface {
	// Start starts c and returns; it MUST call done exactly once with c's
	// answer, from any goroutine (or before returning), and MUST call it
	// (with an error) once ctx is done if the answer has not come by then.
	// done MUST NOT be called with a lock held that the run's goroutine may
	// want: it hands the answer over without blocking.
	Start(ctx context.Context, c driver.Call, done func(json.RawMessage, error))
}

// Inliner is a Bridge some of whose calls are quick local work that never
// waits on anything outside this process (a read of the tool tree under a
// journal that does not wait for a commit): the run makes such a call on
// its own goroutine instead of handing it to a helper goroutine, which saves
// the two goroutine switches a call otherwise costs. The tool still sees a
// promise, settled in the same order as before.
//
// IMPORTANT: Inline MUST return true only for calls that cannot block for
// long: an inlined call runs where the run's interrupt cannot reach it.
type Inliner interface {
	Inline(c driver.Call) bool
}

// Instant is a Bridge that knows the answer of some calls at once, held in
// memory, with nothing to wait for and no effect to make (a worker's pinned
// read of the tool tree: workerside's pinGate): the run takes such an
// answer on its own goroutine, with no channel, callback or helper. The
// tool still sees a promise, settled in the same order as before.
//
// IMPORTANT: Instant MUST NOT block, and MUST answer (ok true) only a call
// whose answer is exactly the one the Bridge's other path would give it at
// this point of the run's call order, with the same effects (none).
type Instant interface {
	Instant(c driver.Call) (val json.RawMessage, ok bool)
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
