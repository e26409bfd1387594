package kerneltools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/agentos-run/agentos/actors/executor"
	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/forge/check"
	gitclient "github.com/agentos-run/agentos/actors/git/client"
	"github.com/agentos-run/agentos/actors/git/gitpb"
	"github.com/agentos-run/agentos/actors/kernel"
	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/actors/kernel/proc"
	regclient "github.com/agentos-run/agentos/actors/registry/client"
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

// Options configure New. Kernel and Jail are required; nil and zero
// fields take the documented defaults. The node constructs none of them:
// the composition root (internal/host) opens them, and the actor tree
// around the node (BootNode there), and closes them after the node.
type Options struct {
	// Kernel is the process table; Close closes it (every process ends).
	Kernel *kernel.Kernel
	// Run are the executor's options (executor.Executor.Options): the
	// default limits of a run, the kill grace, the tools directory. The
	// node never reaches into the executor; runs go to the executor actor.
	Run executor.Options
	// Journal records every exec_tool run (nil: runs are not recorded); the
	// node does not close it.
	Journal *journal.Journal
	// Jail is the tool root; the node does not close it.
	Jail *vfs.Jail
	// Checker is check_tool's analyzer (nil: check.New with defaults).
	Checker *check.Checker
	// LLM is the model the forge asks (llm.Client.Device()); nil:
	// forge_tool still reuses a registered tool that fits, and answers
	// forge.ErrNoModel when one would have to be written.
	LLM driver.Device
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
	// Approvals is the approval gate (nil: none; every tool runs as soon
	// as it is asked for). IMPORTANT: a node embedded without it runs
	// high-risk tools unasked; agentos.Start always passes one unless
	// governance.approval.off is set. The node does not close its store.
	Approvals *approval.Gate
	// Logger receives the node's logs (nil: slog.Default).
	Logger *slog.Logger
	// MaxArgsBytes bounds the JSON arguments of one kernel tool call (0:
	// DefaultMaxArgsBytes). Larger calls are refused, and charged, with
	// ErrArgsTooLarge before they are decoded.
	MaxArgsBytes int
	// TracerProvider and MeterProvider receive the kernel calls' spans and
	// metrics (nil: the OpenTelemetry globals).
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// CaptureContent records GenAI content (an agent's tool arguments and
	// results) on the spans of its agents (see package telemetry).
	// IMPORTANT: off by default: they MAY hold personal data.
	CaptureContent bool
}

// Node is the kernel tools bound to processes, over the node's actor tree
//
//	agentos (supervisor, one_for_one)
//	├── kernel    the process table's actor (ps, events, signals)
//	├── executor  tool runs
//	├── registry  the tool index (meta.json, search)
//	├── git       the one writer of the tool tree, persisting to Git
//	└── forge     reuse-or-forge
//
// which the composition root (internal/host) builds around it: New, then
// the actors with the node's Wiring, then Attach.
type Node struct {
	k      *kernel.Kernel
	opts   Options
	sys    *system.System
	kernel *actor.PID
	exec   *actor.PID
	// The clients of the actors; IMPORTANT: set once by Attach, before any
	// call (the git actor's registry client and the forge's executor
	// client point here).
	execClient  execclient.Client
	forgeClient forge.Client
	regClient   regclient.Client
	gitClient   gitclient.Client
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
	// run are the executor's options (Options.Run): the default limits of
	// a run, the kill grace, the tools directory.
	run executor.Options
	// risks caches check_tool's risk by content hash (the approval gate).
	risks riskCache
}

// New makes the kernel tools over opts. The node answers no call until
// Attach has given it its actor tree.
func New(opts Options) (*Node, error) {
	if opts.Kernel == nil || opts.Jail == nil {
		return nil, fmt.Errorf("%w: kerneltools.New needs a Kernel and a Jail", kernel.ErrInvalid)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	checker := opts.Checker
	if checker == nil {
		checker = check.New(check.Options{})
	}
	tel, err := newTelemetry(opts.Kernel, opts.TracerProvider, opts.MeterProvider, opts.CaptureContent)
	if err != nil {
		return nil, err
	}
	return &Node{k: opts.Kernel, opts: opts, checker: checker, tel: tel, run: opts.Run}, nil
}

// Wiring is the node's side of the actors the composition root builds
// around it: the callbacks they call, and the clients through which they
// reach their siblings. IMPORTANT: the clients are bound by Attach; an
// actor MUST NOT use them before (starting the tree does not).
type Wiring struct {
	// OnRefused is the executor actor's (executor.ActorOptions.OnRefused).
	OnRefused func(executor.Refusal)
	// Charge is the executor actor's (executor.ActorOptions.Charge).
	Charge func(ctx context.Context, home string, pid uint64, m capability.Meter, amount float64) error
	// AdmitModule and AdmitRemote are the executor actor's: the approval gate.
	AdmitModule func(entry string, m journal.Module, src []byte) error
	AdmitRemote func(ctx context.Context, path, token string) (executor.Admitted, error)
	// OnCommitted is the git actor's (git.Options.OnCommitted).
	OnCommitted func(*gitpb.Committed)
	// Charger is the forge's (forge.Options.Charger): it also charges a
	// caller of another node on its home node (forge.HomeCharger).
	Charger forge.Charger
	// Executor, Registry and Git are the clients the forge and the git
	// actor reach their siblings through.
	Executor *execclient.Client
	Registry *regclient.Client
	Git      *gitclient.Client
}

// Wiring returns the node's side of its actors.
func (n *Node) Wiring() Wiring {
	return Wiring{
		OnRefused: n.onRefused, Charge: n.chargeCaller, AdmitModule: n.admitModule, AdmitRemote: n.admitRemote,
		OnCommitted: n.onCommitted, Charger: kernelCharger{n},
		Executor: &n.execClient, Registry: &n.regClient, Git: &n.gitClient,
	}
}

// Tree is the node's actor tree as the composition root started it: the
// actor system and the PIDs of the supervisor's children.
type Tree struct {
	System                                 *system.System
	Kernel, Executor, Registry, Git, Forge *actor.PID
	// Gate is the registration gate the git actor consults (nil: disabled).
	Gate *gate.Gate
}

// Attach binds the node to its started actor tree. IMPORTANT: call it
// once, before any call. The tree's owner stops it after Close.
func (n *Node) Attach(t Tree) error {
	if t.System == nil || t.Kernel == nil || t.Executor == nil || t.Registry == nil || t.Git == nil || t.Forge == nil {
		return errors.New("kernel: the actor tree started without all its children (see the log)")
	}
	n.sys, n.kernel, n.exec, n.rootCtx, n.gate = t.System, t.Kernel, t.Executor, t.System.Root(), t.Gate
	n.execClient = execclient.Client{PID: t.Executor, Root: n.rootCtx}
	n.regClient = regclient.Client{PID: t.Registry, Root: n.rootCtx}
	n.gitClient = gitclient.Client{PID: t.Git, Root: n.rootCtx}
	n.forgeClient = forge.Client{PID: t.Forge, Root: n.rootCtx}
	return nil
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

// Processes returns the node's process table as the process-handle leaf
// sees it (agent.Node, mcpserver.Node): the same kernel as Kernel.
func (n *Node) Processes() proc.Table { return n.k }

// process returns the kernel's process behind the handle p. IMPORTANT: the
// kernel tools run only for a process of this node's kernel: any other
// proc.Process is refused with kernel.ErrInvalid.
func (n *Node) process(p proc.Process) (*kernel.Process, error) {
	kp, ok := p.(*kernel.Process)
	if !ok || kp == nil || kp.Kernel() != n.k {
		return nil, fmt.Errorf("%w: the kernel tools run for a process of this node's kernel (a handle it spawned), not %T", kernel.ErrInvalid, p)
	}
	return kp, nil
}

// Gate returns the node's registration gate; nil when it is disabled
// (gate.Options.Runs < 0).
func (n *Node) Gate() *gate.Gate { return n.gate }

// RegistryClient returns a typed client of the node's registry actor: list,
// search and get its tools, and watch their changes (regclient.Client.Watch),
// as messages. It is the registry the MCP server follows (mcpserver.Options).
func (n *Node) RegistryClient() *regclient.Client {
	c := n.regClient
	return &c
}

// ActorSystem returns the node's actor system, for actors of the embedding
// program (spawned with its Spawn, they are stopped with the tree).
func (n *Node) ActorSystem() *system.System { return n.sys }

// KernelPID is the kernel actor's PID: the node's process-table endpoint,
// reached with kernelclient.Client{PID: n.KernelPID(), Root: ...}.
func (n *Node) KernelPID() *actor.PID { return n.kernel }

// WriteFile writes content to path (relative to the tool root) through the
// node's git actor, as the operator: no process's rights are checked. The
// file is registered when it is a tool and, with a Git upstream, committed
// and pushed like every tool write (see gitclient.Client.WriteFile). It is how
// the runtime saves personas (package persona).
func (n *Node) WriteFile(ctx context.Context, path string, content []byte) (gitclient.Written, error) {
	return n.gitClient.WriteFile(ctx, path, content)
}

// KernelClient is the typed client of the node's kernel actor: ps, events,
// signals, spawn, send and monitor of agent processes as messages.
func (n *Node) KernelClient() kernelclient.Client {
	return kernelclient.Client{PID: n.kernel, Root: n.rootCtx}
}

// Close ends every process (reason "shutdown", cancelling their tool runs)
// and leaves the cluster, bounded by ctx. The actor tree, executor,
// journal and jail are left to their owner to close, after Close.
func (n *Node) Close(ctx context.Context) error {
	return errors.Join(n.LeaveCluster(ctx), n.k.Close(ctx))
}
