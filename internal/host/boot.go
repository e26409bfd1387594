package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/governance/gate"
	"github.com/agentos-run/agentos/kerneltools"
	"github.com/agentos-run/agentos/memory"
	"github.com/asynkron/protoactor-go/actor"
)

// NodeOptions configure BootNode: the kernel tools' options (kerneltools.Options;
// Kernel nil: kernel.New with the Logger) and the resources their actors
// are built on. Executor and Jail are required; nil and zero fields take
// the documented defaults.
type NodeOptions struct {
	kerneltools.Options
	// Executor runs the tools, behind the executor actor; BootNode does not
	// close it. Its Options() are the kernel tools' Run.
	Executor *executor.Executor
	// Registry indexes the tools, behind the registry actor (nil: a
	// registry over Jail with the defaults is opened).
	Registry *registry.Registry
	// Repo persists every write to Git (nil: writes stay in the working
	// tree); BootNode does not close it.
	Repo *repo.Repo
	// NodeOnly are directories of the tool root that only the node itself
	// writes, besides personas/ (git.Options.NodeOnly): the configured
	// personas directory. No kernel tool or other node writes there.
	NodeOnly []string
	// ForgeAttempts bounds a forge's generate-check-test rounds (0: 3).
	ForgeAttempts int
	// ForgeRetries is forge.Options.ModelRetries (0: 2; negative: none).
	ForgeRetries int
	// ForgeLessons is how many lessons from Memory (its caller's and the
	// "forge" agent's) a forge adds to its prompt (0: none).
	ForgeLessons int
	// Gate configures the registration gate (docs/GOVERNANCE.md): a
	// write_file, patch_file or forge that changes an existing tool source
	// first replays the recorded runs of the previous version (from
	// Journal, on Executor) against the new one. The zero value replays
	// gate.DefaultRuns runs and warns; Runs < 0 disables it.
	Gate gate.Options
	// OnGateReport, when set, receives every report of the registration
	// gate (the console keeps the last one per tool). It MUST NOT block.
	OnGateReport func(gate.Report)
	// Intensity, Period and Backoff tune the root supervisor (defaults: 10
	// restarts within 10 s, backoff from 10 ms doubling to 1 s).
	Intensity int
	Period    time.Duration
	Backoff   supervisor.Backoff
}

// A BootedNode is a node BootNode assembled: the kernel tools over their
// actor tree.
type BootedNode struct {
	*kerneltools.Node
	closers []namedClose
}

// Close ends every process (reason "shutdown", cancelling their tool
// runs), leaves the cluster, then stops the actor tree children first,
// bounded by ctx. The executor, journal and jail are left to their owner
// to close, after Close.
func (b *BootedNode) Close(ctx context.Context) error {
	return closeAll(ctx, b.closers)
}

// BootNode assembles a node over opts: the kernel tools, then the actor
// tree around them (kernel, executor, registry, git and forge actors under
// one supervisor), in the order nodeAssembly.steps lists. A step that
// fails closes the steps opened before it.
func BootNode(ctx context.Context, opts NodeOptions) (*BootedNode, error) {
	if opts.Executor == nil || opts.Jail == nil {
		return nil, fmt.Errorf("%w: BootNode needs an Executor and a Jail", kernel.ErrInvalid)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	a := &nodeAssembly{opts: opts}
	closers, err := openSteps(ctx, a.steps())
	if err != nil {
		return nil, err
	}
	return &BootedNode{Node: a.n, closers: closers}, nil
}

// nodeAssembly is a node in the making: what each step made, for the
// steps after it.
type nodeAssembly struct {
	opts    NodeOptions
	checker *check.Checker
	n       *kerneltools.Node
	gate    *gate.Gate // nil: the registration gate is disabled
	forge   *forge.Forge
}

// steps is the node's assembly, in order: the kernel tools first, since
// every actor is wired to them (node.Wiring), the actor tree last.
func (a *nodeAssembly) steps() []step {
	return []step{
		{"process table", a.openKernel},
		{"registry", a.openRegistry},
		{"kernel tools", a.openKernelTools},
		{"registration gate", a.openGate},
		{"forge", a.openForge},
		{"actor tree", a.openTree},
	}
}

// openKernel makes the process table when the caller gave none; the
// kernel tools close it.
func (a *nodeAssembly) openKernel(context.Context) (closeFunc, error) {
	if a.opts.Kernel != nil {
		return nil, nil
	}
	var err error
	a.opts.Kernel, err = kernel.New(kernel.Options{Logger: a.opts.Logger})
	return nil, err
}

// openRegistry opens a registry over the jail when the caller gave none.
func (a *nodeAssembly) openRegistry(context.Context) (closeFunc, error) {
	if a.opts.Registry != nil {
		return nil, nil
	}
	var err error
	a.opts.Registry, err = registry.Open(a.opts.Jail, registry.Options{Logger: a.opts.Logger})
	return nil, err
}

// openKernelTools makes the kernel tools (kerneltools.New), with check_tool's
// analyzer, which the forge shares.
func (a *nodeAssembly) openKernelTools(context.Context) (closeFunc, error) {
	if a.checker = a.opts.Checker; a.checker == nil {
		a.checker = check.New(check.Options{})
	}
	o := a.opts.Options
	o.Checker, o.Run = a.checker, a.opts.Executor.Options()
	var err error
	a.n, err = kerneltools.New(o)
	return nil, err
}

// openGate makes the registration gate, unless it is disabled.
func (a *nodeAssembly) openGate(context.Context) (closeFunc, error) {
	if !a.opts.Gate.Enabled() {
		return nil, nil
	}
	// The gate replays through the executor actor's client, bound when
	// the tree starts (before any write reaches the gate).
	g, err := newGate(a.n.Wiring().Executor, a.opts.Executor.Options().Workers, a.opts.Journal, a.opts.Gate)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", kernel.ErrInvalid, err)
	}
	a.gate = g
	return nil, nil
}

// openForge makes the forge. It runs without a model too: reuse needs none
// (forge_tool then fails only when a tool must be written). It reaches the
// registry, git and executor actors through their clients, and charges
// through the kernel actor's (all bound once the tree has started).
func (a *nodeAssembly) openForge(context.Context) (closeFunc, error) {
	o, w := a.opts, a.n.Wiring()
	var lessons driver.Device
	if o.Memory != nil && o.ForgeLessons > 0 {
		lessons = memory.LessonsDevice(o.Memory)
	}
	f, err := forge.New(forge.Options{
		Lessons: lessons, LessonsLimit: o.ForgeLessons,
		LLM: o.LLM, Registry: w.Registry, Threshold: o.Registry.Threshold(), Checker: a.checker, Git: w.Git,
		Jail: o.Jail, Journal: o.Journal, MaxAttempts: o.ForgeAttempts, ModelRetries: o.ForgeRetries, Logger: o.Logger, PII: o.PII,
		Executor: w.Executor, Charger: w.Charger, TracerProvider: o.TracerProvider, CaptureContent: o.CaptureContent,
	})
	a.forge = f
	return nil, err
}

// supervision is the root supervisor's spec over the node's actors, wired
// to the kernel tools.
func (a *nodeAssembly) supervision() supervisor.Spec {
	o, w, k := a.opts, a.n.Wiring(), a.opts.Kernel
	var gater git.Gater
	if a.gate != nil {
		gater = a.gate
		if o.OnGateReport != nil {
			gater = reportingGater{a.gate, o.OnGateReport}
		}
	}
	spec := supervisor.Spec{
		Strategy: supervisor.OneForOne, Intensity: o.Intensity, Period: o.Period, Backoff: o.Backoff,
		Children: []supervisor.ChildSpec{
			{Name: "kernel", Props: kernel.Props(k)},
			{Name: "executor", Props: executor.Props(o.Executor, executor.ActorOptions{
				Journal: o.Journal, Authority: k.Authority(), RequireCaller: true, OnRefused: w.OnRefused, Charge: w.Charge,
				AdmitModule: w.AdmitModule, AdmitRemote: w.AdmitRemote,
			})},
			{Name: "registry", Props: registry.Props(o.Registry)},
			// The git actor registers every write with the registry actor
			// (data files and tests are written, not registered).
			{Name: "git", Props: git.Props(git.Options{Jail: o.Jail, Repo: o.Repo, Registry: w.Registry, OnCommitted: w.OnCommitted, Gate: gater, Authority: k.Authority(), NodeOnly: o.NodeOnly})},
			{Name: "forge", Props: forge.Props(a.forge)},
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
	return spec
}

// openTree starts the actor tree and attaches the kernel tools to it. Its
// close ends every process and leaves the cluster (node.Close), then stops
// every actor (protoactor's own Shutdown stops none), the supervisor after
// its children.
func (a *nodeAssembly) openTree(context.Context) (closeFunc, error) {
	props, err := supervisor.Props(a.supervision())
	if err != nil {
		return nil, err
	}
	sys := system.New(system.Options{Logger: a.opts.Logger})
	stop := func(ctx context.Context) error { return sys.Shutdown(stopTimeout(ctx)) }
	root, err := sys.SpawnNamed(props, "agentos")
	if err != nil {
		_ = sys.Shutdown(0)
		return nil, fmt.Errorf("kernel: starting the actor tree: %w", err)
	}
	tree, err := childrenOf(sys, root)
	tree.Gate = a.gate
	if err == nil {
		err = a.n.Attach(tree)
	}
	if err != nil {
		_ = stop(context.Background())
		return nil, err
	}
	return func(ctx context.Context) error { return errors.Join(a.n.Close(ctx), stop(ctx)) }, nil
}

// childrenOf asks the root supervisor for its children's PIDs.
func childrenOf(sys *system.System, root *actor.PID) (kerneltools.Tree, error) {
	res, err := sys.Root().RequestFuture(root, &supervisor.WhichChildren{}, 5*time.Second).Result()
	if err != nil {
		return kerneltools.Tree{}, fmt.Errorf("kernel: the actor tree did not start: %w", err)
	}
	t := kerneltools.Tree{System: sys}
	children := res.(*supervisor.Children)
	for i, name := range children.Names {
		pid := children.PIDs[i]
		switch name {
		case "kernel":
			t.Kernel = pid
		case "executor":
			t.Executor = pid
		case "registry":
			t.Registry = pid
		case "git":
			t.Git = pid
		case "forge":
			t.Forge = pid
		}
	}
	return t, nil
}

// stopTimeout is how long ctx leaves an actor tree to stop.
func stopTimeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return system.DefaultStopTimeout
}
