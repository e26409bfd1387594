package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/mcpdriver"
	"github.com/agentos-run/agentos/internal/lru"
	"github.com/agentos-run/agentos/internal/toolmeta"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/transpile"
	"github.com/agentos-run/agentos/vfs"
)

// Request is one exec_tool call.
type Request struct {
	// Path of the tool, relative to the tool root, e.g. tools/math/fib.ts.
	Path string
	// Args is the JSON object passed to the tool's default export; empty
	// means {}.
	Args json.RawMessage
	// Limits override the executor's default limits field by field.
	Limits Limits
	// Middleware wraps the run's Host, outermost first: the hook through
	// which the journal records and replays every call of the run.
	Middleware []driver.Middleware
	// Source, when set, is run instead of the file at Path; Path still names
	// the module (its directory resolves relative requires). Replay uses it
	// to run the recorded or a patched version of a tool.
	Source []byte
	// Overlay holds, by clean path, modules the run loads from memory
	// instead of the tool tree: a require that resolves to one of its
	// paths loads that content (the caller's Rights checked on the path,
	// as from disk), and the entry is run from it when Source is nil. Any
	// other path, and every read_file, goes to the tool tree as usual. The
	// forge's test runs use it: the candidate and its tests are never
	// written. IMPORTANT: the executor actor accepts it only from a sender
	// on this node and only under StagingDir (overlayOf).
	Overlay map[string][]byte
	// Rights are the rights of the run's caller. When set, every file
	// operation on the tool root (read_file, write_file, list_files in /lib
	// and root-relative paths; /tmp is the run's own) and every require of
	// another module MUST pass them, checked on the resolved path: a tool
	// never does more than its caller could do directly. The entry module
	// itself is not checked here (the caller's exec right on it is the
	// kernel's check). nil means no caller restriction (the operator's own
	// runs: agentos exec, replay). IMPORTANT: a run made for a process MUST
	// set it (the executor actor does, from the Run's caller token; see
	// rights.go).
	Rights vfs.Rights
	// Caller, when set, is journaled with the run (journal.RunMeta.Caller)
	// so that recovery resumes it under the same rights as Rights.
	Caller *journal.Caller
	// Replayed marks a run made again from the journal (ReplayWith, and
	// recovery's resumed runs). IMPORTANT: what it runs MUST NOT depend on
	// the devices' state now: a require of a generated /mcp module is made
	// from its path alone (mcpdriver.NamedModule), never from a server's
	// tool list (which may have changed, lost its cache or its server), and
	// no server is started for it.
	Replayed bool
	// Recorded, when set with Replayed (ReplayWith sets it), is the
	// Replayer answering the run in Middleware. A sandbox worker is handed
	// its answerable calls with the job and answers each call that equals
	// its recording itself, without a round trip to this process; every
	// other call (a divergence, a sealed answer, one past the recording)
	// goes through Middleware as before, so answers and divergences are
	// exactly Middleware's. IMPORTANT: set it only when Middleware answers
	// every call from that Replayer (nothing else on the chain needs to see
	// the calls).
	Recorded *journal.Replayer
	// StreamLocal lets a sandbox worker answer the calls it can make
	// itself (clock.now and random.seed, when Options replaces neither
	// device) without waiting for this process: the tool gets the answer
	// at once, and the call with its answer is streamed to this process,
	// which passes it down Middleware as the device's answer, in the order
	// the worker made the calls and before the run's outcome is returned
	// (so a journal commits them before the run's end). A streamed call
	// that Middleware fails (the journal cannot record it) fails the run
	// (host_failure). IMPORTANT: set it only when nothing on Middleware
	// needs the tool to wait until a call is handled (Record sets it unless
	// its journal is SyncEach, which promises a call durable before the
	// tool sees its answer) and no middleware alters or refuses these
	// calls. Ignored in-process.
	StreamLocal bool
	// Pins, when set, pins the run's requires to recorded versions: a
	// require that resolves to one of Pins.Modules runs its recorded
	// source, whatever the tool tree holds now (see Pins). Replay,
	// recovery and a call by version (ResolveVersion) set it.
	Pins *Pins
	// OnModule, when set, is called for every module the run requires from
	// the tool tree (pinned or read from the tree; not the entry, not a
	// generated /mcp module), with its source, before the module runs; an
	// error fails that require. Record sets it to journal the run's
	// modules (journal.Run.AddModule).
	OnModule func(journal.Module, []byte) error
	// AdmitModule, when set, is asked for every module OnModule is told
	// of, before it: an error refuses that require, as it is (a
	// driver.Error keeps its code), and the module neither runs nor is
	// recorded. The executor actor sets it for a run the approval gate
	// judged (RunRequest.GateModules, ActorOptions.AdmitModule).
	AdmitModule func(journal.Module, []byte) error
	// OnTrace, when set, is told the OpenTelemetry trace id (32 hex
	// digits) of the run's execute_tool span when the span starts, if the
	// tracer gave it one (a no-op tracer, tracing off, gives none). Record
	// sets it to journal the id (journal.Run.SetTraceID).
	OnTrace func(traceID string)

	version string // the full hash ResolveVersion resolved Path's @version to
	// recording: the recording a replayed or resumed run follows (Replay,
	// Resume), for its pinned reads (snapshot.recorded).
	recording *journal.Replayer
}

// InProcessWarning is logged once by every executor started with
// IsolationInProcess: what that mode cannot bound (see docs/SANDBOX.md).
const InProcessWarning = "agentos: isolation is inprocess: tools run inside this process, where a native built-in that ignores its interrupt (a sort or JSON.stringify of huge data) can run past the timeout, a single allocation the guards miss can exceed the memory limit or kill the process, and a crash takes the host down (its run is then quarantined); use process isolation for tools you do not trust"

// Executor runs tools. It is safe for concurrent use.
type Executor struct {
	opts    Options
	root    *vfs.Jail
	engine  *sandbox.Engine
	pool    *pool // nil in-process
	tel     *telemetry
	closed  atomic.Bool
	binding []sandbox.Binding
	// params caches the declared parameter schema of entry modules by
	// content hash (nil: the tool declares none).
	params *lru.Cache[string, *toolmeta.Params]
}

// New returns an Executor over the tool root opts.Root. With
// IsolationProcess it starts warming its worker pool in the background.
func New(opts Options) (*Executor, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	root, err := vfs.Open(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("executor: opening the tool root: %w", err)
	}
	tel, err := newTelemetry(opts.TracerProvider, opts.MeterProvider)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("executor: setting up telemetry: %w", err)
	}
	// The scratch directories of runs whose process was SIGKILLed (a
	// crashed host, a killed worker's parent) are never cleaned by them.
	cleanStaleScratch(opts.TempDir, opts.Logger)
	e := &Executor{opts: opts, root: root, tel: tel, binding: append(slices.Clone(sandbox.DefaultBindings), opts.Bindings...),
		params: lru.New[string, *toolmeta.Params](transpile.DefaultCacheEntries)}
	if opts.Isolation == IsolationInProcess {
		opts.Logger.Warn(InProcessWarning)
		e.engine = sandbox.NewEngine(0, true)
	} else {
		n := opts.Workers
		if n <= 0 {
			n = runtime.GOMAXPROCS(0)
		}
		e.pool = newPool(n, opts)
	}
	return e, nil
}

// Options returns the executor's options with defaults filled in.
func (e *Executor) Options() Options { return e.opts }

// Close stops every worker process and releases the tool root. Runs in
// flight end with Kind "cancelled" or "crash".
func (e *Executor) Close() error {
	if !e.closed.CompareAndSwap(false, true) {
		return nil
	}
	if e.pool != nil {
		e.pool.close()
	}
	return e.root.Close()
}

// Exec runs the tool at req.Path with req.Args. It never panics and never
// returns a Go error: see Result.Error. A driver or middleware that panics
// aborts the run with Kind "internal"; the process lives on.
func (e *Executor) Exec(ctx context.Context, req Request) execclient.Result {
	res, _ := e.exec(ctx, req)
	return res
}

// exec is Exec, also returning the value a driver panicked with (nil when
// none did), so that the executor actor can hand it to its supervisor.
func (e *Executor) exec(ctx context.Context, req Request) (res execclient.Result, panicked any) {
	start := time.Now()
	ctx, span := e.tel.start(ctx, req, e.opts.Isolation)
	if sc := span.SpanContext(); req.OnTrace != nil && sc.HasTraceID() {
		req.OnTrace(sc.TraceID().String())
	}
	defer func() {
		res.Duration = time.Since(start)
		res.Success = res.Error == nil
		if res.Logs == nil {
			res.Logs = []string{}
		}
		if res.Result == nil {
			res.Result = json.RawMessage("null")
		}
		e.tel.end(ctx, span, res, e.opts.Isolation)
	}()
	entry, src, err := e.entryOf(req)
	res.Hash = entry.Hash
	if err != nil {
		res.Error = err
		return res, nil
	}

	sb := vfs.NewSandbox(e.root, vfs.SandboxConfig{ToolsDir: e.opts.ToolsDir, WriteDirs: e.opts.WriteDirs, TempDir: e.opts.TempDir, Rights: req.Rights})
	defer sb.Close()
	mounts := mountsFor(e.opts.Mounts, req.Rights)
	mux, sessions := e.devices(sb, mounts)
	br := e.bridgeFor(req, sb, mux, mounts)
	job := sandbox.Job{Entry: entry, Args: req.Args, Limits: req.Limits.Or(e.opts.Limits), Bindings: e.binding}

	var out sandbox.Outcome
	if e.pool != nil {
		out = e.pool.run(ctx, job, br)
	} else {
		job.HeapShared = true
		out = e.engine.Run(ctx, job, br)
	}
	res.Result, res.Logs, res.Error, res.Calls = out.Result, out.Logs, out.Err, out.Calls
	res.Error = e.verdictOf(entry.Path, src, res.Error)
	if p := br.panicked.Load(); p != nil {
		res.Error = &Error{Kind: sandbox.KindInternal, Message: p.msg}
	}
	res.Error = endSessions(ctx, sessions, res.Error)
	if p := br.panicked.Load(); p != nil {
		return res, p.value
	}
	return res, nil
}

// verdictOf is the error of a run whose entry (path, with TypeScript src)
// failed with err. A source the fast path made runnable without esbuild
// (transpile.Runnable) is judged by goja's compiler alone when it runs;
// when it does not compile, esbuild's diagnostics are the ones check_tool
// reports and a user acts on, so the run fails with those when esbuild
// refuses the source too. Asking caches esbuild's verdict: check_tool of
// the same content reports it from then on.
func (e *Executor) verdictOf(path string, src []byte, err *Error) *Error {
	if err == nil || err.Kind != sandbox.KindCompile || src == nil {
		return err
	}
	if _, terr := e.opts.Transpiler.Transpile(path, src); terr != nil {
		return &Error{Kind: sandbox.KindCompile, Message: terr.Error()}
	}
	return err
}

// entryOf checks req and reads its tool: the module to run and its
// TypeScript source, or the error refusing the run before it starts. Once
// the source is read, entry.Hash is set even when the arguments do not fit
// the tool's parameters.
func (e *Executor) entryOf(req Request) (entry sandbox.Module, src []byte, err *Error) {
	if e.closed.Load() {
		return entry, nil, &Error{Kind: sandbox.KindCancelled, Message: "the executor is closed"}
	}
	if err := checkArgs(req.Args); err != nil {
		return entry, nil, err
	}
	if _, v, ok := SplitVersion(req.Path); ok && req.Source == nil {
		return entry, nil, &Error{Kind: sandbox.KindNotFound, Code: driver.CodeNotFound, Message: fmt.Sprintf("%s names version %s, and versions are kept in the journal: run it through a journaled entry point (agentos exec, exec_tool) or call executor.ResolveVersion first", req.Path, v)}
	}
	src = req.Source
	if src == nil {
		src = overlaid(req.Overlay, req.Path)
	}
	m, src, err := e.moduleWith(req.Path, src)
	if err != nil {
		return entry, nil, err
	}
	return m, src, e.checkParams(m, src, req.Args)
}

// devices is a run's device mux: the built-in fs (reading through sb and
// mounts), clock and random, then Options.Devices, then a device opened
// from each of Options.Sessions, which are also returned: each ends with
// the run (endSessions).
func (e *Executor) devices(sb *vfs.Sandbox, mounts map[string]driver.Mount) (driver.Mux, []driver.RunDevice) {
	mux := driver.Mux{
		driver.FSDriver:     driver.FS{Sandbox: sb, Mounts: mounts},
		driver.ClockDriver:  driver.Clock{Now: e.opts.Clock},
		driver.RandomDriver: driver.Random{Seed: e.opts.Seed},
	}
	for name, d := range e.opts.Devices {
		mux[name] = d
	}
	sessions := make([]driver.RunDevice, 0, len(e.opts.Sessions))
	for name, s := range e.opts.Sessions {
		rd := s.Open()
		mux[name] = rd
		sessions = append(sessions, rd)
	}
	return mux, sessions
}

// bridgeFor is the bridge between req's run and its devices (mux, through
// req.Middleware). It may change mux: the calls a worker answers itself
// are streamed (localCalls), and a run that reads inline refuses the fs
// calls that would reach the disk behind its snapshot's back.
func (e *Executor) bridgeFor(req Request, sb *vfs.Sandbox, mux driver.Mux, mounts map[string]driver.Mount) *bridge {
	var local []string
	if req.StreamLocal && e.pool != nil {
		local = e.localCalls(mux)
	}
	pinned := pinsReads(req, mux)
	var snap *snapshot
	if pinned {
		snap = snapshotFor(sb, req, e.pool != nil)
		mux[driver.FSDriver] = refusingFS{mux[driver.FSDriver]}
	}
	br := &bridge{e: e, host: driver.Chain(mux, req.Middleware...), rights: req.Rights, mounts: mounts, replayed: req.Replayed, local: local, pins: req.Pins, onModule: req.OnModule, admit: req.AdmitModule, inlineReads: pinned && e.pool == nil, snap: snap, overlay: req.Overlay}
	if req.Replayed && req.Recorded != nil && e.pool != nil {
		br.answers, br.consumed = answersOf(req.Recorded), req.Recorded.Consumed
	}
	if pinned && e.pool != nil {
		br.plan = planOf(req.recording)
	}
	return br
}

// pinsReads reports whether req's run pins the files of the tools
// directory it reads (snapshot): when nothing on their way waits (no
// journal, one that queues its entries (not SyncEach), or a replay
// answering from memory) and the device is the built-in fs. In process,
// these reads are made on the run's goroutine (sandbox.Inliner); in a
// worker, the worker keeps the pins (pinGate).
func pinsReads(req Request, mux driver.Mux) bool {
	_, builtinFS := mux[driver.FSDriver].(driver.FS)
	return builtinFS && (req.StreamLocal || req.Replayed || len(req.Middleware) == 0)
}

// snapshotFor is the snapshot of the tool tree a run that pins reads. A
// replayed or resumed run's recording says which reads it holds; a replay
// (not a recovery) never goes live: every call is inside its recording.
// In a worker (worker), the parent does not see the recorded reads the
// worker answers itself: the recording says what they pinned.
func snapshotFor(sb *vfs.Sandbox, req Request, worker bool) *snapshot {
	snap := newSnapshot(sb)
	if !req.Replayed || req.recording == nil {
		return snap
	}
	snap.recorded = req.recording.Recorded
	if worker {
		snap.pinnedAt = recordedPins(sb, req.recording)
	}
	if req.Recorded != nil {
		snap.recorded = func(seq uint64) (bool, bool) {
			has, _ := req.recording.Recorded(seq)
			return has, true
		}
	}
	return snap
}

// endSessions ends each of a run's sessions with its outcome (failed nil:
// the tool succeeded, and a SQL transaction commits) and returns the run's
// error: failed, else a failed commit's, after which the sessions left end
// as failed.
func endSessions(ctx context.Context, sessions []driver.RunDevice, failed *Error) *Error {
	for _, rd := range sessions {
		if err := rd.End(context.WithoutCancel(ctx), failed == nil); err != nil && failed == nil {
			failed = &Error{Kind: sandbox.KindHostFailure, Message: err.Error() + "; nothing the run wrote through that driver was kept"}
		}
	}
	return failed
}

// localCalls returns the calls ("driver.op") a worker may answer itself
// for a run whose devices are mux, and makes mux's devices for them answer
// a streamed call with the worker's answer (streamedAnswer). A device that
// Options replaces (Clock, Seed, Devices) is left to this process.
func (e *Executor) localCalls(mux driver.Mux) []string {
	var local []string
	if _, replaced := e.opts.Devices[driver.ClockDriver]; e.opts.Clock == nil && !replaced {
		local = append(local, driver.ClockDriver+".now")
		mux[driver.ClockDriver] = streamed{mux[driver.ClockDriver]}
	}
	if _, replaced := e.opts.Devices[driver.RandomDriver]; e.opts.Seed == nil && !replaced {
		local = append(local, driver.RandomDriver+".seed")
		mux[driver.RandomDriver] = streamed{mux[driver.RandomDriver]}
	}
	return local
}

// streamed is a device whose calls a worker may have answered itself: a
// call carrying the worker's answer (streamedAnswer) is answered with it,
// any other goes to the device.
type streamed struct{ driver.Device }

type streamedKey struct{}

// streamedAnswer returns ctx carrying a worker's answer to the call it is
// passed with.
func streamedAnswer(ctx context.Context, val json.RawMessage) context.Context {
	return context.WithValue(ctx, streamedKey{}, val)
}

func (s streamed) Do(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
	if v, ok := ctx.Value(streamedKey{}).(json.RawMessage); ok {
		return v, nil
	}
	return s.Device.Do(ctx, op, req)
}

// answersOf returns the recorded answers of rep a worker may give itself,
// up to maxAnswerBytes of them in seq order.
func answersOf(rep *journal.Replayer) []answer {
	var out []answer
	size := 0
	for _, en := range rep.Answerable() {
		size += len(en.Request) + len(en.Response) + 64
		if en.Error != nil {
			size += len(en.Error.Message)
		}
		if size > maxAnswerBytes {
			break
		}
		a := answer{Seq: en.Seq, Driver: en.Driver, Op: en.Op, Request: en.Request, Val: en.Response}
		if en.Error != nil {
			a.Err, a.Val = &driver.Error{Code: en.Error.Code, Message: en.Error.Message}, nil
		}
		out = append(out, a)
	}
	return out
}

// checkArgs requires args to be a JSON object (or empty).
func checkArgs(args json.RawMessage) *Error {
	s := strings.TrimSpace(string(args))
	if s == "" {
		return nil
	}
	if !json.Valid(args) {
		return &Error{Kind: sandbox.KindInvalidArgs, Message: "args is not valid JSON: pass a JSON object such as {\"n\": 10}"}
	}
	if s[0] != '{' {
		return &Error{Kind: sandbox.KindInvalidArgs, Message: "args must be a JSON object such as {\"n\": 10}, not " + s[:min(len(s), 40)]}
	}
	return nil
}

// checkParams validates args against the parameter types the entry module
// declares: the JSON Schema the registry derives for meta.json, computed
// here from the source being run (never a possibly stale meta.json) and
// cached by content hash. Every entry point (agentos exec, exec_tool, the
// embedding API, replay) runs through here.
func (e *Executor) checkParams(entry sandbox.Module, src []byte, args json.RawMessage) *Error {
	ps, ok := e.params.Get(entry.Hash)
	if !ok {
		ps = toolmeta.ParamsOf(src)
		e.params.Add(entry.Hash, ps)
	}
	if err := ps.Validate(args); err != nil {
		return &Error{Kind: sandbox.KindInvalidArgs, Message: fmt.Sprintf("%v; %s declares its parameters' types (its meta.json lists them as JSON Schema): pass arguments of those types", err, entry.Path)}
	}
	return nil
}

// Source returns the current source of the tool at p and its content hash.
func (e *Executor) Source(p string) (src []byte, hash string, err error) {
	clean, err := vfs.Clean(p)
	if err != nil {
		return nil, "", pathError(p, err)
	}
	if src, err = e.root.ReadFile(clean); err != nil {
		return nil, "", pathError(p, err)
	}
	return src, transpile.Hash(src), nil
}

// module reads and transpiles the tool at p (root-relative).
func (e *Executor) module(p string) (sandbox.Module, *Error) {
	m, _, err := e.moduleWith(p, nil)
	return m, err
}

// moduleWith transpiles src (or, when nil, the file at p) as module p. A
// module read from the root is named by where its path resolves (like
// Node's realpath), so that its own relative requires start from there. It
// also returns the TypeScript source.
func (e *Executor) moduleWith(p string, src []byte) (sandbox.Module, []byte, *Error) {
	clean, err := vfs.Clean(p)
	if err != nil {
		return sandbox.Module{}, nil, pathError(p, err)
	}
	if src == nil {
		if src, clean, err = e.root.ReadFileResolved(clean, nil); err != nil {
			return sandbox.Module{}, nil, pathError(p, err)
		}
	}
	out, err := e.opts.Transpiler.Runnable(clean, src)
	if err != nil {
		return sandbox.Module{}, nil, &Error{Kind: sandbox.KindCompile, Message: err.Error()}
	}
	return sandbox.Module{Path: clean, Hash: out.Hash, JS: out.JS}, src, nil
}

func pathError(p string, err error) *Error {
	switch {
	case errors.Is(err, vfs.ErrSecurity):
		return &Error{Kind: sandbox.KindSecurity, Message: err.Error(), Code: driver.CodeSecurity}
	case errors.Is(err, vfs.ErrNotFound):
		return &Error{Kind: sandbox.KindNotFound, Message: fmt.Sprintf("no tool at %q: check the path (relative to the tool root, e.g. tools/math/fib.ts)", p), Code: driver.CodeNotFound}
	}
	return &Error{Kind: sandbox.KindNotFound, Message: err.Error()}
}

// bridge answers a run's calls: driver calls through the Host, requires
// through the executor's loader.
type bridge struct {
	e        *Executor
	host     driver.Host
	rights   vfs.Rights                         // the caller's (Request.Rights); nil: none
	mounts   map[string]driver.Mount            // the mounts as the caller sees them (mountsFor)
	replayed bool                               // Request.Replayed
	answers  []answer                           // recorded answers a worker may give itself (Request.Recorded)
	consumed func(seqs ...uint64)               // reports the seqs it gave
	local    []string                           // the calls a worker answers itself and streams ("clock.now"; Request.StreamLocal)
	pins     *Pins                              // Request.Pins
	overlay  map[string][]byte                  // Request.Overlay
	onModule func(journal.Module, []byte) error // Request.OnModule
	admit    func(journal.Module, []byte) error // Request.AdmitModule
	panicked atomic.Pointer[driverPanic]        // the first driver panic of the run
	// inlineReads: fs.read_file of a path outside the mounts is made on the
	// run's goroutine (Inline).
	inlineReads bool
	// snap: the run's pinned reads of the tool tree; nil unless the run
	// pins (pinsReads). plan: the same run's pin plan, in a worker.
	snap *snapshot
	plan *pinPlan
}

// Inline says c is a read of the tool tree that the run may make on its
// own goroutine (sandbox.Inliner): the jail's read of a regular file under
// a journal that does not wait. A path under a mount (/mcp: its device may
// start a server) goes to a helper goroutine as before.
func (b *bridge) Inline(c driver.Call) bool {
	if !b.inlineReads {
		return false
	}
	b.snap.started(c) // IMPORTANT: in call order, on the run's goroutine
	if c.Driver != driver.FSDriver || c.Op != "read_file" {
		return false
	}
	if len(b.mounts) == 0 {
		return true
	}
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(c.Request, &a) != nil {
		return false
	}
	_, _, _, mounted := driver.MountOf(b.mounts, a.Path)
	return !mounted
}

type driverPanic struct {
	value any
	msg   string
}

// Do answers one call. A panicking driver or middleware aborts the run (the
// tool cannot catch it) instead of taking the process down.
func (b *bridge) Do(ctx context.Context, c driver.Call) (json.RawMessage, error) {
	out, _, err := b.doPinned(ctx, c)
	return out, err
}

// doPinned is Do, also saying whether the answer is pinned for the rest of
// the run (a worker may keep it: see pinGate).
func (b *bridge) doPinned(ctx context.Context, c driver.Call) (out json.RawMessage, pin bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			msg := fmt.Sprintf("the %s driver panicked on call %d (%s): %v; the run was aborted (a bug in that driver or a middleware)\n%s", c.Driver, c.Seq, c.Op, v, debug.Stack())
			b.panicked.CompareAndSwap(nil, &driverPanic{value: v, msg: msg})
			out, pin, err = nil, false, driver.Errorf(driver.CodeAbort, "%s", msg)
		}
	}()
	if b.snap == nil || c.Driver != driver.FSDriver || c.Op != "read_file" {
		out, err := b.host.Do(ctx, c)
		return out, false, err
	}
	return b.readPinned(ctx, c)
}

// Require resolves a module like Node's CommonJS, within the tools
// directory: relative specifiers from the requiring module's directory,
// /lib/... from the tools directory, bare names from <tools>/vendor/ when
// allowed; then the exact path, .ts, .js, /index.ts, /index.js. A candidate
// is resolved through its links (vfs.Jail.Resolve) and MUST stay in the
// tools directory where it leads; with the caller's Rights set, the caller
// MUST hold the read right on that resolved path.
func (b *bridge) Require(ctx context.Context, from, spec string) (sandbox.Module, error) {
	tools := path.Clean(b.e.opts.ToolsDir)
	base, m, done, err := b.requireBase(ctx, tools, from, spec)
	if done || err != nil {
		return m, err
	}
	inTools := func(p string) bool { return inToolsDir(tools, p) }
	if base != tools && !inTools(base) {
		return sandbox.Module{}, driver.Errorf(driver.CodeSecurity, "require(%q) from %s leaves the tools directory %s/", spec, from, tools)
	}
	candidates := []string{base + ".ts", base + ".js", base + "/index.ts", base + "/index.js"}
	if ext := path.Ext(base); ext == ".ts" || ext == ".js" {
		candidates = append([]string{base}, candidates...)
	}
	// IMPORTANT: a pinned run loads the recorded version of a module it
	// required, whichever candidate the tree would give now.
	if b.pins != nil {
		for _, c := range candidates {
			if pm, ok := b.pins.lookup(c); ok && inTools(c) {
				return b.requirePinned(pm, from, spec)
			}
		}
	}
	for _, c := range candidates {
		if src, ok := b.overlay[c]; ok {
			return b.load(c, c, src, from, spec)
		}
	}
	for _, c := range candidates {
		if !inTools(c) {
			continue // e.g. require('.') from the top: tools.ts is outside
		}
		if m, ok, err := b.requireCandidate(tools, c, from, spec); ok || err != nil {
			return m, err
		}
	}
	return sandbox.Module{}, driver.Errorf(driver.CodeNotFound, "cannot find module %q from %s (tried %s)", spec, from, strings.Join(candidates, ", "))
}

// inToolsDir says whether p is in the tools directory tools.
func inToolsDir(tools, p string) bool { return tools == "." || strings.HasPrefix(p, tools+"/") }

// requireBase is where spec, required by from, points in the tools
// directory; done when it is a mount's module, then loaded (m), or
// refused (err).
func (b *bridge) requireBase(ctx context.Context, tools, from, spec string) (base string, m sandbox.Module, done bool, err error) {
	switch {
	case spec == "":
		return "", sandbox.Module{}, true, driver.Errorf(driver.CodeInvalid, "require(''): the module id is empty")
	case strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../") || spec == "." || spec == "..":
		return path.Join(path.Dir(from), spec), sandbox.Module{}, false, nil
	case strings.HasPrefix(spec, vfs.LibMount+"/"):
		return path.Join(tools, strings.TrimPrefix(spec, vfs.LibMount+"/")), sandbox.Module{}, false, nil
	case strings.HasPrefix(spec, "/"):
		m, err := b.requireAbsolute(ctx, from, spec)
		return "", m, true, err
	}
	allowed := b.e.opts.AllowedImports
	if !slices.Contains(allowed, spec) {
		said := "none are configured"
		if len(allowed) > 0 {
			said = "allowed: " + strings.Join(allowed, ", ")
		}
		return "", sandbox.Module{}, true, driver.Errorf(driver.CodeSecurity, "import of module %q is not allowed (%s); tools reach the outside only through tgp (tgp.read_file, tgp.write_file, ...) and may require other tools by relative path", spec, said)
	}
	return path.Join(tools, "vendor", spec), sandbox.Module{}, false, nil
}

// requireAbsolute loads an absolute spec: a mount's generated module (a
// replayed run's /mcp module from its name alone), else it is refused.
func (b *bridge) requireAbsolute(ctx context.Context, from, spec string) (sandbox.Module, error) {
	if b.replayed {
		if name, ok := underMount(spec, mcpdriver.Mount); ok {
			return b.requireNamedMCP(name, from, spec)
		}
	}
	if m, point, name, ok := driver.MountOf(b.mounts, spec); ok {
		return b.requireMounted(ctx, m, point, name, from, spec)
	}
	return sandbox.Module{}, driver.Errorf(driver.CodeSecurity, "require(%q) from %s: absolute module paths are refused; use './x', '/lib/x'%s", spec, from, mountHint(b.mounts))
}

// requireCandidate loads candidate c from the tree: false when there is no
// such file; an error when it leads out of the tools directory, the caller
// may not read it, or it does not compile.
func (b *bridge) requireCandidate(tools, c, from, spec string) (sandbox.Module, bool, error) {
	e := b.e
	r, err := e.root.Resolve(c)
	if err == nil {
		var fi fs.FileInfo
		if fi, err = e.root.Stat(r); err == nil && fi.IsDir() {
			return sandbox.Module{}, false, nil
		}
	}
	if err != nil {
		if errors.Is(err, vfs.ErrSecurity) {
			return sandbox.Module{}, false, driver.Errorf(driver.CodeSecurity, "require(%q) from %s: %v", spec, from, err)
		}
		return sandbox.Module{}, false, nil
	}
	if !inToolsDir(tools, r) {
		return sandbox.Module{}, false, driver.Errorf(driver.CodeSecurity, "require(%q) from %s: %s resolves (through a symbolic link) to %s, outside the tools directory %s/", spec, from, c, r, tools)
	}
	m, err := b.load(c, r, nil, from, spec)
	return m, err == nil, err
}

// load loads module c, resolved to r, from src (nil: the file r of the
// tool tree) for require(spec) from from: the caller's read right on r
// checked, transpiled, and handed to the journal.
func (b *bridge) load(c, r string, src []byte, from, spec string) (sandbox.Module, error) {
	if b.rights != nil {
		if err := b.rights.Allow(vfs.AccessRead, r); err != nil {
			return sandbox.Module{}, driver.Errorf(driver.CodeSecurity, "require(%q) from %s: the tool runs with its caller's rights, and the caller may not read %s (%v)", spec, from, r, err)
		}
	}
	m, src, xerr := b.e.moduleWith(r, src)
	if xerr != nil {
		return sandbox.Module{}, driver.Errorf(string(xerr.Kind), "require(%q) from %s: %s", spec, from, xerr.Message)
	}
	if b.pins != nil {
		b.pins.noteTree(m.Path)
	}
	as := ""
	if c != m.Path {
		as = c
	}
	if err := b.noteModule(journal.Module{Path: m.Path, Hash: m.Hash, As: as}, src); err != nil {
		return sandbox.Module{}, err
	}
	return m, nil
}

// overlaid is the content of p in overlay (nil: none).
func overlaid(overlay map[string][]byte, p string) []byte {
	if len(overlay) == 0 {
		return nil
	}
	c, err := vfs.Clean(p)
	if err != nil {
		return nil
	}
	return overlay[c]
}

// requireMounted loads a generated module of a mount (e.g.
// /mcp/github/create_issue), transpiled through the shared cache. Its
// source comes from the mount (the mcp driver's tool list, cached on
// disk), never from a live server: its run-time code depends only on its
// path, so a replay runs the same code offline.
func (b *bridge) requireMounted(ctx context.Context, m driver.Mount, point, name, from, spec string) (sandbox.Module, error) {
	name = strings.TrimSuffix(name, ".ts")
	if name == "" {
		return sandbox.Module{}, driver.Errorf(driver.CodeNotFound, "require(%q) from %s: %s is a directory; require one module, e.g. %s/<server>/<tool>", spec, from, point, point)
	}
	src, err := m.ReadFile(ctx, name+".ts")
	if err != nil {
		e := driver.AsError(err)
		return sandbox.Module{}, driver.Errorf(e.Code, "require(%q) from %s: %s", spec, from, e.Message)
	}
	return b.generated(point+"/"+name+".ts", src, from, spec)
}

// requireNamedMCP loads the generated module /mcp/<name> of a replayed
// run from its path alone (mcpdriver.NamedModule): the same run-time code
// as the one the run recorded, whatever the servers, their tool lists and
// their caches are now. A caller's rights still apply (the mcp right on
// "<server>/<tool>"), as in the recorded run.
func (b *bridge) requireNamedMCP(name, from, spec string) (sandbox.Module, error) {
	name = strings.TrimSuffix(name, ".ts")
	src, err := mcpdriver.NamedModule(name)
	if err != nil {
		return sandbox.Module{}, driver.Errorf(driver.CodeNotFound, "require(%q) from %s: %v", spec, from, err)
	}
	if b.rights != nil {
		if err := callerRightsOf(b.rights).Allow(mcpdriver.Right, name); err != nil {
			return sandbox.Module{}, driver.Errorf(driver.CodeSecurity, "require(%q) from %s: the tool runs with its caller's rights, and the caller may not call %s (%v)", spec, from, name, err)
		}
	}
	return b.generated(mcpdriver.Mount+"/"+name+".ts", src, from, spec)
}

// generated is the generated module src at path p (under a mount),
// transpiled through the shared cache, as required by spec from from.
func (b *bridge) generated(p string, src []byte, from, spec string) (sandbox.Module, error) {
	out, err := b.e.opts.Transpiler.Runnable(p, src)
	if err != nil {
		return sandbox.Module{}, driver.Errorf(string(sandbox.KindCompile), "require(%q) from %s: the generated module does not compile: %v", spec, from, err)
	}
	return sandbox.Module{Path: p, Hash: out.Hash, JS: out.JS}, nil
}

// underMount returns p's name under the mount point (ok false: p is not
// under it). p is cleaned lexically first.
func underMount(p, point string) (string, bool) {
	p = path.Clean(p)
	if !strings.HasPrefix(p, point+"/") {
		return "", false
	}
	return strings.TrimPrefix(p, point+"/"), true
}

// mountHint names the mounts a tool may require from, for an error.
func mountHint(mounts map[string]driver.Mount) string {
	points := make([]string, 0, len(mounts))
	for p := range mounts {
		points = append(points, "'"+p+"/...'")
	}
	slices.Sort(points)
	if len(points) == 0 {
		return ""
	}
	return " or " + strings.Join(points, ", ")
}
