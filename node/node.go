package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/actors/git"
	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/actors/registry"
	"github.com/agentos-run/agentos/actors/supervisor"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/mcpdriver"
	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/governance/gate"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/memory"
	"github.com/agentos-run/agentos/pii"
	"github.com/agentos-run/agentos/vfs"
	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Options configure Boot. Executor and Jail are required; nil and zero
// fields take the documented defaults.
type Options struct {
	// NodeOnly are directories of the tool root that only the node itself
	// writes, besides personas/ (git.Options.NodeOnly): the configured
	// personas directory. No kernel tool or other node writes there.
	NodeOnly []string
	// Kernel is the process table (nil: kernel.New(kernel.Options{Logger})).
	Kernel *kernel.Kernel
	// Executor runs the tools; the node does not close it.
	Executor *executor.Executor
	// Journal records every exec_tool run (nil: runs are not recorded); the
	// node does not close it.
	Journal *journal.Journal
	// Jail is the tool root; the node does not close it.
	Jail *vfs.Jail
	// Checker is check_tool's analyzer (nil: check.New with defaults).
	Checker *check.Checker
	// Registry indexes the tools for search_tools (nil: a registry over
	// Jail with the defaults is opened).
	Registry *registry.Registry
	// LLM is the model forge_tool asks (llm.Client.Device()); nil:
	// forge_tool still reuses a registered tool that fits, and answers
	// forge.ErrNoModel when one would have to be written.
	LLM driver.Device
	// ForgeAttempts bounds a forge's generate-check-test rounds (0: 3).
	ForgeAttempts int
	// ForgeRetries is forge.Options.ModelRetries (0: 2; negative: none).
	ForgeRetries int
	// SQL is the database of the exec_sql kernel tool (nil: exec_sql
	// answers that no database is configured).
	SQL *driver.SQL
	// MCP is the mcp driver over the configured MCP servers (nil: none):
	// list_files and read_file serve its generated modules under /mcp, and
	// search_tools ranks its tools with the registered ones. The node does
	// not close it.
	MCP *mcpdriver.Client
	// PII tokenizes what the forge sends to its model: its chat requests
	// and its test runs' output (nil: nothing is tokenized). The executor's
	// data drivers are wrapped where they are built (agentos'
	// OpenExecutorSetup), not here.
	PII *pii.Tokenizer
	// Memory is the agents' long-term memory, behind the remember, recall
	// and forget kernel tools and context paging (nil: those tools answer
	// that none is configured); the node does not close it.
	Memory *memory.Store
	// ForgeLessons is how many lessons from Memory (its caller's and the
	// "forge" agent's) a forge adds to its prompt (0: none).
	ForgeLessons int
	// Repo persists every write to Git (nil: writes stay in the working
	// tree); the node does not close it.
	Repo *repo.Repo
	// Gate configures the registration gate (docs/GOVERNANCE.md):
	// a write_file, patch_file or forge that changes an existing tool
	// source first replays the recorded runs of the previous version
	// (from Journal, on Executor) against the new one. The zero value
	// replays gate.DefaultRuns runs and warns; Runs < 0 disables it.
	Gate gate.Options
	// Approvals is the approval gate (nil: none; every tool runs as soon
	// as it is asked for). IMPORTANT: a node embedded without it runs
	// high-risk tools unasked; agentos.Start always passes one unless
	// governance.approval.off is set. The node does not close its store.
	Approvals *approval.Gate
	// Logger receives the node's and protoactor's logs (nil: slog.Default).
	Logger *slog.Logger
	// MaxArgsBytes bounds the JSON arguments of one kernel tool call (0:
	// DefaultMaxArgsBytes). Larger calls are refused, and charged, with
	// ErrArgsTooLarge before they are decoded.
	MaxArgsBytes int
	// Intensity, Period and Backoff tune the root supervisor (defaults: 10
	// restarts within 10 s, backoff from 10 ms doubling to 1 s).
	Intensity int
	Period    time.Duration
	Backoff   supervisor.Backoff
	// TracerProvider and MeterProvider receive the kernel calls' spans and
	// metrics (nil: the OpenTelemetry globals).
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// CaptureContent records GenAI content (an agent's tool arguments and
	// results) on the spans of its agents (see package telemetry).
	// IMPORTANT: off by default: they MAY hold personal data.
	CaptureContent bool
}

// Node is a booted runtime: the process table plus the actor tree
//
//	agentos (supervisor, one_for_one)
//	├── kernel    the process table's actor (ps, events, signals)
//	├── executor  tool runs
//	├── registry  the tool index (meta.json, search)
//	└── git       the one writer of the tool tree, persisting to Git
//
// and the kernel tools bound to processes.
type Node struct {
	k      *kernel.Kernel
	opts   Options
	sys    *system.System
	root   *actor.PID
	kernel *actor.PID
	exec   *actor.PID
	reg    *actor.PID
	git    *actor.PID
	forge  *actor.PID // reuses without an LLM; forging needs one
	// The clients of the actors; IMPORTANT: set once Boot has the actors'
	// PIDs, before any call (the git actor's registry client and the
	// forge's executor client point here).
	execClient  executor.Client
	forgeClient forge.Client
	regClient   registry.Client
	gitClient   git.Client
	rootCtx     *actor.RootContext
	checker     *check.Checker
	gate        *gate.Gate // nil: disabled
	tel         *telemetry
	// inflight counts the exec_tool runs on this node's executor; spread
	// rotates the members runs are placed on.
	inflight, spread atomic.Int64
	// clusterMu guards cl, the node's cluster membership (nil: alone).
	clusterMu sync.Mutex
	cl        *clustered
	// ephemeral are the memory names of processes without a name whose
	// end is watched (their memory is dropped then).
	ephemeral sync.Map
	// memNames are the memory names bound to live processes (BindMemory):
	// *kernel.Process -> string.
	memNames sync.Map
	// run are the executor's options, read once at Boot: the default
	// limits of a run, the kill grace, the tools directory. The node never
	// reaches into the executor afterwards; runs go through execClient.
	run executor.Options
	// risks caches check_tool's risk by content hash (the approval gate).
	risks riskCache
}

// Boot starts the actor tree and returns the node.
func Boot(opts Options) (*Node, error) {
	if opts.Executor == nil || opts.Jail == nil {
		return nil, fmt.Errorf("%w: Boot needs an Executor and a Jail", kernel.ErrInvalid)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	k := opts.Kernel
	if k == nil {
		var err error
		if k, err = kernel.New(kernel.Options{Logger: opts.Logger}); err != nil {
			return nil, err
		}
	}
	checker := opts.Checker
	if checker == nil {
		checker = check.New(check.Options{})
	}
	if opts.Registry == nil {
		var err error
		if opts.Registry, err = registry.Open(opts.Jail, registry.Options{Logger: opts.Logger}); err != nil {
			return nil, err
		}
	}
	tel, err := newTelemetry(k, opts.TracerProvider, opts.MeterProvider, opts.CaptureContent)
	if err != nil {
		return nil, err
	}
	n := &Node{k: k, opts: opts, checker: checker, tel: tel, run: opts.Executor.Options()}
	var gater git.Gater
	if opts.Gate.Enabled() {
		if n.gate, err = gate.New(opts.Executor, opts.Journal, opts.Gate); err != nil {
			return nil, fmt.Errorf("%w: %w", kernel.ErrInvalid, err)
		}
		gater = n.gate
	}
	n.sys = system.New(system.Options{Logger: opts.Logger})
	spec := supervisor.Spec{
		Strategy:  supervisor.OneForOne,
		Intensity: opts.Intensity,
		Period:    opts.Period,
		Backoff:   opts.Backoff,
		Children: []supervisor.ChildSpec{
			{Name: "kernel", Props: kernel.Props(k)},
			{Name: "executor", Props: executor.Props(opts.Executor, executor.ActorOptions{
				Journal: opts.Journal, Authority: k.Authority(), RequireCaller: true, OnRefused: n.onRefused, Charge: n.chargeCaller,
				AdmitModule: n.admitModule, AdmitRemote: n.admitRemote,
			})},
			{Name: "registry", Props: registry.Props(opts.Registry)},
			// The git actor registers every write with the registry actor
			// (data files and tests are written, not registered).
			{Name: "git", Props: git.Props(git.Options{Jail: opts.Jail, Repo: opts.Repo, Registry: &n.regClient, OnCommitted: n.onCommitted, Gate: gater, Authority: k.Authority(), NodeOnly: opts.NodeOnly})},
		},
		OnEvent: func(ev supervisor.Event) {
			k.Emit(kernel.Event{Kind: kernel.EventRestart, Name: ev.Failed, Reason: ev.Reason, Detail: fmt.Sprintf("%s %v after %s", ev.Action, ev.Children, ev.Delay)})
		},
	}
	if spec.Intensity == 0 {
		spec.Intensity = 10
	}
	if spec.Period == 0 {
		spec.Period = 10 * time.Second
	}
	if spec.Backoff == (supervisor.Backoff{}) {
		spec.Backoff = supervisor.Backoff{Initial: 10 * time.Millisecond, Max: time.Second, Factor: 2}
	}
	// The forge runs without a model too: reuse needs none (forge_tool then
	// fails only when a tool must be written).
	{
		var lessons driver.Device
		if opts.Memory != nil && opts.ForgeLessons > 0 {
			lessons = memory.LessonsDevice(opts.Memory)
		}
		f, err := forge.New(forge.Options{
			Lessons: lessons, LessonsLimit: opts.ForgeLessons,
			LLM: opts.LLM, Registry: &n.regClient, Threshold: opts.Registry.Threshold(), Checker: checker, Git: &n.gitClient,
			Jail: opts.Jail, Journal: opts.Journal, MaxAttempts: opts.ForgeAttempts, ModelRetries: opts.ForgeRetries, Logger: opts.Logger, PII: opts.PII,
			// The forge reaches the registry, git and executor actors
			// through their clients, and charges through the kernel
			// actor's (all bound once the tree has started).
			Executor: &n.execClient, Charger: kernelCharger{n}, TracerProvider: opts.TracerProvider,
		})
		if err != nil {
			return nil, err
		}
		spec.Children = append(spec.Children, supervisor.ChildSpec{Name: "forge", Props: forge.Props(f)})
	}
	props, err := supervisor.Props(spec)
	if err != nil {
		return nil, err
	}
	if n.root, err = n.sys.SpawnNamed(props, "agentos"); err != nil {
		_ = n.sys.Shutdown(0)
		return nil, fmt.Errorf("kernel: starting the actor tree: %w", err)
	}
	n.rootCtx = n.sys.Root()
	res, err := n.rootCtx.RequestFuture(n.root, &supervisor.WhichChildren{}, 5*time.Second).Result()
	if err != nil {
		_ = n.stopTree(context.Background())
		return nil, fmt.Errorf("kernel: the actor tree did not start: %w", err)
	}
	for i, name := range res.(*supervisor.Children).Names {
		pid := res.(*supervisor.Children).PIDs[i]
		switch name {
		case "kernel":
			n.kernel = pid
		case "executor":
			n.exec = pid
		case "registry":
			n.reg = pid
		case "git":
			n.git = pid
		case "forge":
			n.forge = pid
		}
	}
	if n.kernel == nil || n.exec == nil || n.reg == nil || n.git == nil || n.forge == nil {
		_ = n.stopTree(context.Background())
		return nil, errors.New("kernel: the actor tree started without all its children (see the log)")
	}
	n.execClient = executor.Client{PID: n.exec, Root: n.rootCtx}
	n.regClient = registry.Client{PID: n.reg, Root: n.rootCtx}
	n.gitClient = git.Client{PID: n.git, Root: n.rootCtx}
	n.forgeClient = forge.Client{PID: n.forge, Root: n.rootCtx}
	return n, nil
}

// onRefused reports a capability refusal of a tool run (the executor
// actor checks the caller's token on every file access and driver call) to
// the kernel actor, which records it as the process's "refused" event,
// exactly like a refused kernel check (counted by agentos.kernel.refusals).
func (n *Node) onRefused(r executor.Refusal) {
	n.KernelClient().Refused(kernel.PID(r.PID), r.Right, r.Resource, r.Err)
}

// chargeCaller charges a tool run's caller for its metered driver calls
// (executor.ActorOptions.Charge): on this node's kernel, or on its home
// node's when the run was placed here from another node.
func (n *Node) chargeCaller(ctx context.Context, home string, pid uint64, m capability.Meter, amount float64) error {
	if home == "" {
		return kernelCharger{n}.Charge(ctx, pid, m, amount)
	}
	return kernelCharger{n}.ChargeAt(ctx, home, pid, m, amount)
}

// kernelCharger charges a forge's model usage to the process it works for,
// with a Charge message to the kernel actor.
type kernelCharger struct{ n *Node }

// Charge implements forge.Charger.
func (c kernelCharger) Charge(ctx context.Context, pid uint64, m capability.Meter, amount float64) error {
	return c.n.KernelClient().Charge(ctx, kernel.PID(pid), m, amount)
}

// ChargeAt implements forge.HomeCharger: a forge placed on this node for a
// process of another node charges that process's quota on its home node,
// with a Charge message to the kernel actor there (the same actor id on
// every node).
func (c kernelCharger) ChargeAt(ctx context.Context, home string, pid uint64, m capability.Meter, amount float64) error {
	// The request crosses to another node: it carries this node's token
	// (kernel.RightCharge), which the home node's kernel actor verifies.
	err := c.n.PeerKernel(home).Charge(ctx, kernel.PID(pid), m, amount)
	if errors.Is(err, system.ErrNoReply) {
		// The home node died or does not answer: the forge stops,
		// resumable, for another caller to take on.
		return fmt.Errorf("%w: %w", forge.ErrCallerGone, err)
	}
	return err
}

// Kernel returns the node's process table.
func (n *Node) Kernel() *kernel.Kernel { return n.k }

// Gate returns the node's registration gate; nil when it is disabled
// (Options.Gate.Runs < 0).
func (n *Node) Gate() *gate.Gate { return n.gate }

// ActorSystem returns the node's actor system, for actors of the embedding
// program (spawned with its Spawn, they are stopped by Close).
func (n *Node) ActorSystem() *system.System { return n.sys }

// KernelPID is the kernel actor's PID: the node's process-table endpoint,
// reached with kernel.Client{PID: n.KernelPID(), Root: ...}.
func (n *Node) KernelPID() *actor.PID { return n.kernel }

// WriteFile writes content to path (relative to the tool root) through the
// node's git actor, as the operator: no process's rights are checked. The
// file is registered when it is a tool and, with a Git upstream, committed
// and pushed like every tool write (see git.Client.WriteFile). It is how
// the runtime saves personas (package persona).
func (n *Node) WriteFile(ctx context.Context, path string, content []byte) (git.Written, error) {
	return n.gitClient.WriteFile(ctx, path, content)
}

// KernelClient is the typed client of the node's kernel actor: ps, events,
// signals, spawn, send and monitor of agent processes as messages.
func (n *Node) KernelClient() kernel.Client {
	return kernel.Client{PID: n.kernel, Root: n.rootCtx}
}

// Close ends every process (reason "shutdown", cancelling their tool runs),
// then stops the actor tree children first, bounded by ctx. The executor,
// journal and jail are left to their owner to close, after Close.
func (n *Node) Close(ctx context.Context) error {
	return errors.Join(n.LeaveCluster(ctx), n.k.Close(ctx), n.stopTree(ctx))
}

// stopTree stops every actor (protoactor's own Shutdown stops none), the
// supervisor after its children.
func (n *Node) stopTree(ctx context.Context) error {
	timeout := system.DefaultStopTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), time.Millisecond)
	}
	return n.sys.Shutdown(timeout)
}
