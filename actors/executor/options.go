package executor

import (
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentos-run/agentos/actors/executor/internal/confine"
	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/mcpdriver"
	"github.com/agentos-run/agentos/transpile"
)

// Isolation says where tools run.
type Isolation string

// The isolation modes.
const (
	// IsolationProcess runs each tool in a sandbox worker process with hard
	// memory and time limits. The default.
	IsolationProcess Isolation = "process"
	// IsolationInProcess runs tools in the host process: faster, for trusted
	// tools only (see the package documentation).
	IsolationInProcess Isolation = "inprocess"
)

// Limits bound one run. Zero fields take the defaults: 5 s wall time,
// 256 MiB memory, 1000 stack frames, 1 MiB of result plus logs.
type Limits = sandbox.Limits

// Binding exposes a driver operation to tools as tgp.<Name>(...).
type Binding = sandbox.Binding

// SQLBinding is tgp.exec_sql(sql, params): the driver.SQL session's one
// operation.
var SQLBinding = Binding{Name: "exec_sql", Driver: driver.SQLDriver, Op: "exec", Params: []string{"sql", "params"}}

// FetchBinding is tgp.fetch(url, init): the driver.Fetch device's one
// operation.
var FetchBinding = Binding{Name: "fetch", Driver: driver.FetchDriver, Op: "fetch", Params: []string{"url", "init"}}

// MCPBinding is tgp.mcp_call(server, tool, args): the mcp driver's one
// operation (driver/mcpdriver), which the generated modules under /mcp call.
var MCPBinding = Binding{Name: "mcp_call", Driver: mcpdriver.Name, Op: "call", Params: []string{"server", "tool", "args"}}

// MCPResourceBinding is tgp.mcp_read_resource(server, uri): an upstream
// server's resource (its contents list), under the mcp right on
// "<server>/resource:<uri>".
var MCPResourceBinding = Binding{Name: "mcp_read_resource", Driver: mcpdriver.Name, Op: mcpdriver.OpReadResource, Params: []string{"server", "uri"}}

// MCPPromptBinding is tgp.mcp_get_prompt(server, prompt, args): an upstream
// server's prompt ({description, messages}), under the mcp right on
// "<server>/prompt:<name>".
var MCPPromptBinding = Binding{Name: "mcp_get_prompt", Driver: mcpdriver.Name, Op: mcpdriver.OpGetPrompt, Params: []string{"server", "prompt", "args"}}

// MCPBindings are the mcp driver's three bindings.
var MCPBindings = []Binding{MCPBinding, MCPResourceBinding, MCPPromptBinding}

// Options configure an Executor. The zero value of every field but Root is a
// sensible default.
type Options struct {
	// Root is the tool root directory. Required.
	Root string
	// ToolsDir is the directory of tools under Root, mounted at /lib.
	// Default "tools".
	ToolsDir string
	// Isolation: IsolationProcess (default) or IsolationInProcess.
	Isolation Isolation
	// Limits are the defaults for runs that set none.
	Limits Limits
	// AllowedImports are bare module names tools may require; each resolves
	// to the vendored copy under <ToolsDir>/vendor/<name>.
	AllowedImports []string
	// WriteDirs are root-relative directories tools may write under (besides
	// /tmp).
	WriteDirs []string
	// Workers is the size of the worker pool. Default: GOMAXPROCS.
	Workers int
	// WorkerCommand starts a worker; nil means agentos-worker next to this
	// program's executable when it is of the same build, else the
	// executable itself (which MUST call WorkerMain): see FindWorkerBinary.
	// The worker-mode environment is added.
	WorkerCommand []string
	// Confine is how sandbox workers confine themselves at the OS level
	// (Landlock, seccomp, no_new_privs; see confine.go): ConfineBestEffort
	// (default), ConfineRequired or ConfineOff. In-process runs are never
	// confined.
	Confine Confine
	// KillGrace is how long a worker gets to finish a run it was told to
	// stop (its deadline, memory or output limit) before it is SIGKILLed:
	// only a native built-in that ignores the interrupt outlasts it. The
	// parent's own deadline is the run's timeout plus KillGrace, so a run
	// that ignores its interrupt ends at most 2 × KillGrace past its
	// timeout. Default 500 ms.
	KillGrace time.Duration
	// Devices are extra drivers (e.g. "sql", "fetch") besides fs, clock and
	// random, and Bindings the tgp functions that reach them.
	Devices  map[string]driver.Device
	Bindings []Binding
	// Sessions are devices with per-run state (e.g. "sql": one transaction
	// per run, committed only when the run succeeds).
	Sessions map[string]driver.Session
	// Mounts are read-only trees of generated modules by absolute mount
	// point, e.g. "/mcp" (the mcp driver's /mcp/<server>/<tool>.ts): a tool
	// may require('/mcp/github/create_issue') and read or list them with
	// tgp.read_file/tgp.list_files. nil: none. A driver.GuardedMount is
	// seen by a run with Request.Rights through them (For): the caller
	// lists, reads and requires only what its rights reach. A replayed run
	// (Request.Replayed) requires /mcp modules from their names alone,
	// without the mount.
	Mounts map[string]driver.Mount
	// Commit, when set, returns the Git commit the tool tree is at
	// (repo.Repo.Head): Record journals it with each run
	// (journal.RunMeta.Commit). nil or an error: none is recorded.
	Commit func() (string, error)
	// Clock and Seed override the clock and random devices (tests, demos).
	Clock func() time.Time
	Seed  func() uint64
	// Transpiler caches transpiled tools; nil means transpile.Default(),
	// shared with check_tool.
	Transpiler *transpile.Transpiler
	// TempDir is where per-run /tmp directories are made; default os.TempDir().
	TempDir string
	// Logger receives worker lifecycle events; nil means slog.Default().
	Logger *slog.Logger
	// TracerProvider and MeterProvider receive a span per run and the run
	// metrics (see telemetry.go); nil means OpenTelemetry's global ones.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
}

func (o Options) withDefaults() (Options, error) {
	if o.Root == "" {
		return o, fmt.Errorf("executor: Options.Root is empty: set it to the tool root directory")
	}
	if o.ToolsDir == "" {
		o.ToolsDir = "tools"
	}
	switch o.Isolation {
	case "":
		o.Isolation = IsolationProcess
	case IsolationProcess, IsolationInProcess:
	default:
		return o, fmt.Errorf("executor: unknown isolation %q: use %q or %q", o.Isolation, IsolationProcess, IsolationInProcess)
	}
	mode, err := confine.ParseMode(string(o.Confine))
	if err != nil {
		return o, fmt.Errorf("executor: %w", err)
	}
	o.Confine = mode
	o.Limits = o.Limits.WithDefaults()
	if o.KillGrace <= 0 {
		o.KillGrace = 500 * time.Millisecond
	}
	if o.Transpiler == nil {
		o.Transpiler = transpile.Default()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}
