package host

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/actors/kernel"
	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/actors/registry"
	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/mcpdriver"
	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/internal/metricsserver"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/kerneltool"
	"github.com/agentos-run/agentos/kerneltools"
	"github.com/agentos-run/agentos/mcpserver"
	"github.com/agentos-run/agentos/memory"
	"github.com/agentos-run/agentos/pii"
	"github.com/agentos-run/agentos/telemetry"
	"github.com/agentos-run/agentos/vfs"
	"go.opentelemetry.io/otel/metric"
)

// CloseTimeout bounds Runtime.Close: how long processes and actors get to
// stop before Close reports them.
const CloseTimeout = 10 * time.Second

// Runtime is a running agentos node: the kernel (processes, capabilities,
// quotas), the actor tree (executor, git), the journal, and a default
// process the kernel tools run as. Its methods are safe for concurrent use.
type Runtime struct {
	cfg       Config
	root      string
	log       *slog.Logger
	j         *journal.Journal
	ledger    *capability.FileLedger // quota use across restarts
	ex        *executor.Executor
	jail      *vfs.Jail
	state     *vfs.Jail // the state directory (.agentos): the registry's log
	reg       *registry.Registry
	repo      *repo.Repo // nil without a Git upstream
	db        *sql.DB
	model     driver.Device // nil without an LLM
	sql       *driver.SQL
	mcp       *mcpdriver.Client
	pii       *pii.Tokenizer // nil: the pii section detects nothing
	piiMap    *pii.BoltMap
	mem       *memory.Store // the agents' memory (.agentos/memory.db, opened on first use)
	node      *kerneltools.Node
	agent     *kernel.Process
	k         *kernel.Kernel
	meter     metric.MeterProvider // the caller's, else metrics'
	setup     *ExecutorSetup       // the drivers the executor is built on
	closers   []namedClose         // the opened steps' closes, in opening order
	gate      *approval.Gate       // nil when governance.approval.off
	recovered []executor.RecoverReport
	metrics   *metricsserver.Metrics // nil when the caller gave a MeterProvider
	metricsSv *metricsserver.Server  // nil without Config.MetricsAddr
	tracing   *telemetry.Provider    // nil: no OTLP exporter configured, or Config.TracerProvider given

	bg        sync.WaitGroup // forges resumed at start
	stopBG    context.CancelFunc
	resumedMu sync.Mutex
	resumed   []ForgeReport
	resuming  []string // the forge runs resumeForges started

	closeOnce sync.Once
	closeErr  error
	closing   atomic.Bool // set when Close begins: /healthz and /readyz answer 503

	mcpOnce sync.Once
	mcpSrv  *mcpserver.Server // nil until MCPServer
	mcpErr  error

	stopRetention func()         // nil until startRetention
	serving       sync.WaitGroup // Serve's shutdowns still closing connections
}

// Start boots a runtime over cfg.Root (default: the current directory) with
// the configuration's defaults: tools in tools/, the journal in
// .agentos/journal.db, process isolation, 5 s and 256 MiB per run. Quota
// use (tool_calls, llm_tokens, cost_usd) of the node and of the default
// process is kept in .agentos/quota.db (QuotaFile) across starts; reset it
// with ResetQuota ('agentos quota reset'). It
// creates the tools and state directories when missing, resumes the runs a
// crash left unfinished (Recovered reports them), and spawns the default
// process with the configured grants and quota.
//
// Start uses cfg as given: to honour a tool root's agentos.json, pass
// LoadConfig(root) (with Root set). With cfg.Git.Upstream set, Start
// clones or updates the tools from it, and every write is committed and
// pushed.
//
// IMPORTANT: with process isolation the program MUST call
// executor.WorkerMain at the start of main (see the executor package).
// Close the runtime to stop it; ctx bounds only the start.
func Start(ctx context.Context, cfg Config) (rt *Runtime, err error) {
	root := cfg.Root
	if root == "" {
		root = "."
	}
	if root, err = filepath.Abs(root); err != nil {
		return nil, err
	}
	if cfg.Cluster, err = cfg.Cluster.WithEnv(nil); err != nil {
		return nil, fmt.Errorf("agentos: the cluster settings in the environment: %w (see %s)", err, ConfigDoc)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("agentos.Config: %w (every setting is documented in %s)", err, ConfigDoc)
	}
	if err := keyOutsideTree(root, cfg.Cluster.Options(root).TLS.KeyFile); err != nil {
		return nil, err // before the git actor commits what the tree holds
	}
	rt = &Runtime{cfg: cfg, root: root, log: cfg.Logger, meter: cfg.MeterProvider}
	if rt.log == nil {
		rt.log = slog.Default()
	}
	if rt.closers, err = openSteps(ctx, rt.steps()); err != nil {
		return nil, err
	}
	return rt, nil
}

// A step is one stage of a node's assembly: open makes one resource (or a
// few that live and die together) and returns what closes it (nil: nothing
// to close). IMPORTANT: Start runs the steps in the order steps lists them,
// each seeing what the earlier ones made; Close runs the closes of the
// steps that opened, in reverse order. A step that fails leaves nothing
// open of its own.
type step struct {
	name string
	open func(ctx context.Context) (closeFunc, error)
}

// closeFunc closes what a step opened, bounded by ctx (CloseTimeout).
type closeFunc func(ctx context.Context) error

// namedClose is a step's close, named for the log of a failed Close.
type namedClose struct {
	step  string
	close closeFunc
}

// openSteps opens steps in order and returns their closes. When one
// fails, it closes the steps opened before it, in reverse, and returns
// its error.
func openSteps(ctx context.Context, steps []step) ([]namedClose, error) {
	var closers []namedClose
	for _, s := range steps {
		c, err := s.open(ctx)
		if err != nil {
			closeCtx, cancel := context.WithTimeout(context.Background(), CloseTimeout)
			defer cancel()
			_ = closeAll(closeCtx, closers)
			return nil, err
		}
		if c != nil {
			closers = append(closers, namedClose{s.name, c})
		}
	}
	return closers, nil
}

// closeAll runs closers in reverse order, bounded by ctx, and joins their
// errors.
func closeAll(ctx context.Context, closers []namedClose) error {
	errs := make([]error, 0, len(closers))
	for i := len(closers) - 1; i >= 0; i-- {
		errs = append(errs, closers[i].close(ctx))
	}
	return errors.Join(errs...)
}

// steps is the node's assembly, in order. The tools come first: Git
// brings the tree up to date, then the registry indexes it, so that
// recovery runs current tools; the kernel tools' node needs every
// resource; the default process, the metrics endpoint and the resumed
// forges come last, once the node answers.
func (rt *Runtime) steps() []step {
	return []step{
		{"state directories", rt.openDirs},
		{"meter provider", rt.openMeter},
		{"tracer provider", rt.openTracing},
		{"tool root", rt.openJails},
		{"tools", rt.openTools},
		{"approvals", rt.openApprovals},
		{"journal", rt.openJournal},
		{"drivers", rt.openDrivers},
		{"executor", rt.openExecutor},
		{"recovery", rt.recoverRuns},
		{"retention", rt.openRetention},
		{"quota ledger", rt.openLedger},
		{"kernel", rt.openKernel},
		{"model", rt.openModel},
		{"memory", rt.openMemory},
		{"node", rt.openNode},
		{"images", rt.registerImages},
		{"cluster", rt.openCluster},
		{"default process", rt.spawnDefault},
		{"metrics endpoint", rt.openMetricsEndpoint},
		{"resumed forges", rt.openResumedForges},
	}
}

// openDirs makes the tools and state directories, private, and tightens
// the state a previous version left readable.
func (rt *Runtime) openDirs(context.Context) (closeFunc, error) {
	for _, d := range []string{rt.cfg.Tools(), StateDir} {
		if err := os.MkdirAll(filepath.Join(rt.root, filepath.FromSlash(d)), 0o700); err != nil {
			return nil, fmt.Errorf("agentos: preparing the tool root: %w", err)
		}
	}
	return nil, rt.cfg.secureState(rt.root, rt.log)
}

// openMeter makes the runtime's own meter provider (a Prometheus registry)
// unless the caller gave one.
func (rt *Runtime) openMeter(context.Context) (closeFunc, error) {
	if rt.meter != nil {
		return nil, nil
	}
	m, err := metricsserver.New(metricsserver.Options{Logger: rt.log})
	if err != nil {
		return nil, err
	}
	rt.metrics, rt.meter = m, m.MeterProvider()
	return m.Shutdown, nil
}

// openTracing starts the OTLP exporter when one is configured
// (OTEL_EXPORTER_OTLP_* or the tracing section) and the caller gave no
// tracer provider. Its close comes after every later step's, so it
// flushes every span the node ended; spans it cannot export are logged,
// no failure of the node.
func (rt *Runtime) openTracing(ctx context.Context) (closeFunc, error) {
	if rt.cfg.TracerProvider != nil {
		return nil, nil
	}
	tp, err := telemetry.Start(ctx, rt.cfg.Tracing)
	if err != nil || tp == nil {
		return nil, err
	}
	rt.tracing, rt.cfg.TracerProvider = tp, tp.TracerProvider()
	return func(ctx context.Context) error {
		if err := tp.Shutdown(ctx); err != nil {
			rt.log.Warn("agentos: spans not exported", slog.Any("err", err))
		}
		return nil
	}, nil
}

// openJails opens the tool root's jail and the state directory's (.agentos:
// the registry's log is node state, never committed).
func (rt *Runtime) openJails(context.Context) (closeFunc, error) {
	jail, err := vfs.Open(rt.root)
	if err != nil {
		return nil, err
	}
	state, err := vfs.Open(filepath.Join(rt.root, StateDir))
	if err != nil {
		jail.Close()
		return nil, err
	}
	rt.jail, rt.state = jail, state
	return func(context.Context) error { return errors.Join(jail.Close(), state.Close()) }, nil
}

// openTools brings the tools up to date from the Git upstream, if one is
// configured, and opens the registry over them. With Git, the registry is
// opened by Hydrate's Regenerate, once the tree is up to date: opening it
// reads every tool file, and so does a Rebuild; doing it once is half the
// registry's share of a start.
func (rt *Runtime) openTools(ctx context.Context) (closeFunc, error) {
	cfg := rt.cfg
	// The fresh checkout tells the registry what it wrote: its first scan
	// reads none of those files again (issue 28 goal 4).
	seed := registry.NewSeed()
	regOpts := registry.Options{ToolsDir: cfg.Tools(), File: RegistryFile, Threshold: cfg.ReuseThreshold, Logger: rt.log, State: rt.state, Seed: seed}
	regenerate := func() error {
		if rt.reg != nil {
			return rt.reg.Rebuild()
		}
		reg, err := registry.Open(rt.jail, regOpts)
		if err == nil {
			rt.reg = reg
		}
		return err
	}
	closeTools := func(context.Context) error {
		var errs []error
		if rt.reg != nil { // Close writes the registry's snapshot: the next start reads it
			errs = append(errs, rt.reg.Close())
		}
		if rt.repo != nil {
			errs = append(errs, rt.repo.Close())
		}
		return errors.Join(errs...)
	}
	if cfg.Git.Upstream != "" {
		opts := cfg.repoOptions(rt.root, regenerate, rt.log)
		opts.CheckedOut = seed.Wrote
		// A later start: the registry lists its tools from Git's scan.
		opts.Walked = seed.Listed
		opts.Derive = func() ([]string, error) { // the registry's shards written from its log before each commit
			if rt.reg == nil {
				return nil, nil
			}
			err := rt.reg.Flush()
			return rt.reg.Written(), err
		}
		var err error
		if rt.repo, err = repo.Hydrate(ctx, opts); err != nil {
			return closeTools, fmt.Errorf("agentos: bringing the tools up to date from %s: %w", cfg.Git.Upstream, err)
		}
	}
	if rt.reg == nil {
		if err := regenerate(); err != nil {
			return closeTools, err
		}
	}
	return closeTools, nil
}

// openApprovals opens the approval gate's file: pending approvals outlive
// the node (none when governance.approval.off).
func (rt *Runtime) openApprovals(context.Context) (closeFunc, error) {
	if rt.cfg.Governance.Approval.Off {
		return nil, nil
	}
	st, err := approval.OpenStore(filepath.Join(rt.root, ApprovalsFile), 2*time.Second)
	if err != nil {
		return nil, err
	}
	rt.gate = approval.NewGate(st, rt.cfg.Governance.Approval.Policy(), rt.log)
	return nil, nil
}

// openJournal opens the journal (bbolt, or PostgreSQL when shared).
func (rt *Runtime) openJournal(context.Context) (closeFunc, error) {
	j, err := rt.cfg.OpenJournal(rt.root, "")
	if err != nil {
		return nil, err
	}
	rt.j = j
	return func(context.Context) error { return j.Close() }, nil
}

// withMeter is the configuration the parts are built from: the caller's,
// with the runtime's own meter provider when the caller gave none.
func (rt *Runtime) withMeter() Config {
	cfg := rt.cfg
	cfg.MeterProvider = rt.meter
	return cfg
}

// openDrivers opens the tools' drivers (the database, the MCP servers, the
// PII map) the executor is built on.
func (rt *Runtime) openDrivers(context.Context) (closeFunc, error) {
	cfg := rt.withMeter()
	setup, err := cfg.OpenExecutorSetup(rt.root, rt.log)
	if err != nil {
		return nil, err
	}
	rt.setup = setup
	rt.db, rt.sql, rt.mcp = setup.DB, setup.SQL, setup.MCP
	rt.pii, rt.piiMap = setup.PII, setup.piiMap
	if rt.repo != nil {
		setup.Options.Commit = rt.repo.Head // the repository's head, kept in memory
	}
	return func(context.Context) error {
		var errs []error
		if rt.mcp != nil {
			errs = append(errs, rt.mcp.Close()) // the MCP sessions; stdio servers exit
		}
		if rt.db != nil {
			errs = append(errs, rt.db.Close())
		}
		if rt.piiMap != nil {
			errs = append(errs, rt.piiMap.Close())
		}
		return errors.Join(errs...)
	}, nil
}

// openExecutor starts the executor (its sandbox workers).
func (rt *Runtime) openExecutor(context.Context) (closeFunc, error) {
	ex, err := rt.setup.NewExecutor(nil)
	if err != nil {
		return nil, err
	}
	rt.ex = ex
	return func(context.Context) error { return ex.Close() }, nil
}

// recoverRuns resumes the runs a crash left unfinished, and logs each.
func (rt *Runtime) recoverRuns(ctx context.Context) (closeFunc, error) {
	var err error
	if rt.recovered, err = executor.Recover(ctx, rt.ex, rt.j); err != nil {
		return nil, fmt.Errorf("agentos: resuming unfinished runs: %w", err)
	}
	for _, r := range rt.recovered {
		if r.Quarantined {
			rt.log.Warn("agentos: quarantined run", slog.String("run", r.Run.ID), slog.String("tool", r.Run.Tool), slog.String("reason", r.Reason))
			continue
		}
		level := slog.LevelInfo
		if r.Failed() {
			level = slog.LevelWarn // resumed and failed, or could not be resumed: never logged as a success
		}
		rt.log.Log(ctx, level, "agentos: unfinished run", slog.String("run", r.Run.ID), slog.String("tool", r.Run.Tool), slog.String("outcome", r.Outcome), slog.String("summary", r.Summary()))
	}
	return nil, nil
}

// openRetention applies the journal's retention now and every RetainEvery.
func (rt *Runtime) openRetention(context.Context) (closeFunc, error) {
	rt.startRetention()
	return func(context.Context) error { rt.stopRetention(); return nil }, nil
}

// openLedger opens the quota ledger, only when a spending limit is
// configured: it is held by one runtime at a time, and runtimes with
// nothing to count (the default) must not queue behind each other on one
// root.
func (rt *Runtime) openLedger(context.Context) (closeFunc, error) {
	quota, _ := rt.cfg.Quota.Limits("quota")
	agentQuota, _ := rt.cfg.Agent.Quota.Limits("agent.quota")
	if !capability.HasCumulative(quota) && !capability.HasCumulative(agentQuota) {
		return nil, nil
	}
	l, err := capability.OpenLedger(filepath.Join(rt.root, QuotaFile))
	if err != nil {
		return nil, err
	}
	rt.ledger = l
	return func(context.Context) error { return l.Close() }, nil
}

// openKernel makes the process table: its quota, the ledger, snapshots in
// the journal, and the capability authority (capability.signing_key_env:
// tokens verify on every node holding the same key; without it the kernel
// makes a random key for this process). The node closes it.
func (rt *Runtime) openKernel(context.Context) (closeFunc, error) {
	quota, _ := rt.cfg.Quota.Limits("quota")
	kopts := kernel.Options{Quota: quota, Logger: rt.log, Snapshots: kernel.JournalSnapshots(rt.j)} // agentos snapshot / restore
	if rt.ledger != nil {
		kopts.Ledger = rt.ledger
	}
	key, err := rt.cfg.CapabilityKey()
	if err != nil {
		return nil, err
	}
	if key != nil {
		// The durable revocations ('agentos token revoke', and those the
		// cluster's other nodes made) are in force from the start.
		store := capability.RevocationFile(filepath.Join(rt.root, RevocationsFile))
		if kopts.Authority, err = capability.New(capability.Options{Key: key, Store: store}); err != nil {
			return nil, err
		}
	}
	rt.k, err = kernel.New(kopts)
	return nil, err
}

// openModel makes the LLM client when a model is configured; its key is a
// secret of the journal (a server may echo it in an answer).
func (rt *Runtime) openModel(context.Context) (closeFunc, error) {
	if rt.cfg.LLM.Model == "" && os.Getenv("AGENTOS_LLM_MODEL") == "" {
		return nil, nil
	}
	lc := rt.cfg.LLM.DriverConfig()
	lc.TracerProvider, lc.CaptureContent = rt.cfg.TracerProvider, telemetry.CaptureContent(rt.cfg.Tracing.CaptureMessageContent)
	client, err := llm.New(lc)
	if err != nil {
		return nil, err
	}
	for _, v := range client.Secrets() {
		rt.j.AddSecret(v)
	}
	rt.model = client.Device()
	return nil, nil
}

// openMemory opens the agents' memory (.agentos/memory.db, on first use).
func (rt *Runtime) openMemory(context.Context) (closeFunc, error) {
	rt.mem = rt.cfg.OpenMemory(rt.root)
	return func(context.Context) error { return rt.mem.Close() }, nil
}

// openNode boots the node (BootNode): the kernel tools and their actor
// tree. Its close closes the MCP server first (its sessions, and the
// processes its tokens made), ends every process, stops the actor tree,
// and waits for the node socket's connections, answered now that runs are
// cancelled.
func (rt *Runtime) openNode(ctx context.Context) (closeFunc, error) {
	cfg := rt.withMeter()
	b, err := BootNode(ctx, NodeOptions{
		Options: kerneltools.Options{
			LLM: rt.model, Memory: rt.mem, Kernel: rt.k, Journal: rt.j, Jail: rt.jail, SQL: rt.sql, MCP: rt.mcp, PII: rt.pii, Approvals: rt.gate,
			Checker: check.New(cfg.CheckOptions()), Logger: rt.log, MaxArgsBytes: cfg.MaxArgs(),
			TracerProvider: cfg.TracerProvider, MeterProvider: cfg.MeterProvider, CaptureContent: telemetry.CaptureContent(cfg.Tracing.CaptureMessageContent),
		},
		Executor: rt.ex, Registry: rt.reg, Repo: rt.repo, NodeOnly: []string{cfg.Agents.Personas()},
		ForgeAttempts: cfg.LLM.ForgeAttempts, ForgeRetries: cfg.LLM.ForgeRetries(), ForgeLessons: cfg.Memory.Lessons(), Gate: cfg.Governance.Gate.Options(),
		OnGateReport: rt.keepGateReport,
	})
	if err != nil {
		return nil, err
	}
	rt.node = b.Node
	return func(ctx context.Context) error {
		var errs []error
		rt.mcpOnce.Do(func() {}) // no MCP server after Close
		if rt.mcpSrv != nil {
			errs = append(errs, rt.mcpSrv.Close())
		}
		errs = append(errs, b.Close(ctx))
		rt.serving.Wait()
		return errors.Join(errs...)
	}, nil
}

// registerImages registers the images a snapshot restores: the default
// process's (under another name while it lives: agentos restore --name)
// and, with a model, the agent's and each template's (a restored agent
// resumes its journaled run).
func (rt *Runtime) registerImages(context.Context) (closeFunc, error) {
	if err := rt.k.RegisterImage("default", serveForever); err != nil {
		return nil, err
	}
	if rt.model == nil {
		return nil, nil
	}
	main := kernel.MainOf(agent.ImageMain(agent.MainOptions{Node: rt.node, Model: rt.model, Journal: rt.j, PII: rt.pii}))
	if err := rt.k.RegisterImage(agent.Image, main); err != nil {
		return nil, err
	}
	for name := range rt.cfg.Agents.Templates {
		if err := rt.k.RegisterImage(TemplateImage(name), main); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// openCluster joins the cluster when it is enabled; the node's close
// leaves it.
func (rt *Runtime) openCluster(ctx context.Context) (closeFunc, error) {
	return nil, rt.joinCluster(ctx)
}

// spawnDefault spawns the default process the kernel tools run as, with
// the configured grants and quota.
func (rt *Runtime) spawnDefault(context.Context) (closeFunc, error) {
	agentQuota, _ := rt.cfg.Agent.Quota.Limits("agent.quota")
	var err error
	rt.agent, err = rt.k.Spawn(serveForever, kernel.SpawnOptions{Name: "agent", Image: "default", Grants: rt.cfg.DefaultGrants(), Quota: agentQuota})
	return nil, err
}

// openMetricsEndpoint serves the metrics and probes at metrics_addr.
func (rt *Runtime) openMetricsEndpoint(context.Context) (closeFunc, error) {
	if rt.cfg.MetricsAddr == "" {
		return nil, nil
	}
	if err := rt.serveMetrics(rt.cfg.MetricsAddr); err != nil {
		return nil, err
	}
	return rt.metricsSv.Shutdown, nil
}

// openResumedForges resumes the forges a crash interrupted
// (Config.ResumeForges); the close cancels them (they stay resumable).
func (rt *Runtime) openResumedForges(context.Context) (closeFunc, error) {
	if !rt.cfg.ResumeForges {
		return nil, nil
	}
	rt.resumeForges()
	return func(context.Context) error {
		if rt.stopBG != nil {
			rt.stopBG()
			rt.bg.Wait()
		}
		return nil
	}, nil
}

// resumeForges resumes, in the background, the forges a crash interrupted
// (Config.ResumeForges): their recorded model answers are replayed (no
// request is sent twice), then they go on live as the default process.
// Each is logged when it starts and when it ends. Close cancels them (they
// stay resumable).
func (rt *Runtime) resumeForges() {
	runs, err := rt.j.Unfinished()
	if err != nil {
		rt.log.Warn("agentos: listing unfinished forges", slog.Any("err", err))
		return
	}
	var ctx context.Context
	ctx, rt.stopBG = context.WithCancel(context.Background())
	for _, meta := range runs {
		if meta.Kind != forge.Kind {
			continue
		}
		rt.log.Info("agentos: resuming interrupted forge", slog.String("run", meta.ID))
		rt.resuming = append(rt.resuming, meta.ID)
		rt.bg.Add(1)
		go func() {
			defer rt.bg.Done()
			res, err := rt.node.ResumeForge(ctx, rt.agent, meta.ID)
			if err != nil { // a resumed forge that failed is never logged as a success
				rt.log.Warn("agentos: resumed forge failed", slog.String("run", meta.ID), slog.Any("err", err))
			} else {
				rt.log.Info("agentos: resumed forge", slog.String("run", meta.ID), slog.String("path", res.Path))
			}
			rt.resumedMu.Lock()
			rt.resumed = append(rt.resumed, ForgeReport{Run: meta.ID, Result: res, Err: errString(err)})
			rt.resumedMu.Unlock()
		}()
	}
}

// AgentOptions configure RunAgent. The zero value: the default grants and
// quota, 20 steps.
type AgentOptions struct {
	// Name registers the agent's process.
	Name string
	// Grants are its rights (nil: the default process's).
	Grants []capability.Grant
	// Quota limits it (its llm_tokens and cost_usd are charged per answer).
	Quota capability.Limits
	// MaxSteps bounds its model requests (0: 20).
	MaxSteps int
	// Persona is its system prompt: a persona of the tool root, "name" or
	// "name@version" (see Personas). "": agents.persona, else the built-in
	// protocol prompt. An unknown persona is an error listing the known.
	Persona string
	// Tools names the kernel tools it is given (nil: all of them).
	Tools []string
	// WindowTokens is the model's context window for this agent: its
	// conversation is paged to its memory when it would outgrow it (0:
	// memory.window_tokens of the configuration; negative: no paging).
	WindowTokens int
	// ReserveTokens is kept free for the answer (0: memory.reserve_tokens,
	// else an eighth of the window).
	ReserveTokens int
	// Distill has the finished run distilled into lessons kept in the
	// agent's memory (also when memory.distill is false). The agent MUST
	// have a Name: an unnamed agent's memory ends with it.
	Distill bool
}

// RunAgent runs task as a new agent process: a model calling the kernel
// tools under the process's capabilities and quota until it answers (see
// package agent, agent.RunProcess), with its persona's system prompt. Its
// model calls are journaled under a run of kind "agent". With
// memory.window_tokens (or opts.WindowTokens) its conversation is paged to
// its memory when it would outgrow the window; a named agent gets the
// lessons of its memory relevant to the task in its system prompt
// (memory.recall_lessons), and with memory.distill (or opts.Distill) its
// finished run is distilled into lessons (see docs/MEMORY.md).
func (rt *Runtime) RunAgent(ctx context.Context, task string, opts AgentOptions) (agent.Result, error) {
	if rt.model == nil {
		return agent.Result{}, ErrNoModel
	}
	grants := opts.Grants
	if grants == nil {
		grants = rt.cfg.DefaultGrants()
	}
	system, used, err := rt.systemFor(opts.Persona)
	if err != nil {
		return agent.Result{}, err
	}
	if opts.Distill && opts.Name == "" {
		return agent.Result{}, errors.New("agentos: AgentOptions.Distill needs a Name: lessons are kept in the memory of a named agent, for its later runs")
	}
	mem, err := rt.agentMemory(opts.Name, opts.WindowTokens, opts.ReserveTokens, opts.Distill)
	if err != nil {
		return agent.Result{}, err
	}
	return agent.RunProcess(ctx, task, agent.ProcessOptions{
		Node: rt.node, Model: rt.model, Journal: rt.j, PII: rt.pii,
		Name: opts.Name, Grants: grants, Quota: opts.Quota, MaxSteps: opts.MaxSteps,
		System: system, Persona: used, Tools: opts.Tools,
		WindowTokens: mem.WindowTokens, ReserveTokens: mem.ReserveTokens,
		Lessons: mem.Lessons, Distill: mem.Distill,
	})
}

// agentMemory resolves an agent's use of memory (RunAgent, Spawn): its
// window (0: memory.window_tokens, with memory.reserve_tokens), the
// lessons recalled (memory.recall_lessons) and the distillation (distill
// or memory.distill). It refuses a name starting with
// memory.EphemeralPrefix: such names are the memories of unnamed agents.
func (rt *Runtime) agentMemory(name string, window, reserve int, distill bool) (agent.MemorySettings, error) {
	if err := memory.CheckProcessName(name); err != nil {
		return agent.MemorySettings{}, fmt.Errorf("agentos: %w", err)
	}
	if window == 0 {
		window = rt.cfg.Memory.WindowTokens
		if reserve == 0 {
			reserve = rt.cfg.Memory.ReserveTokens
		}
	}
	if window > 0 && reserve >= window {
		return agent.MemorySettings{}, fmt.Errorf("agentos: the agent's reserve of %d tokens leaves nothing of its %d-token window: reserve less (0: an eighth)", reserve, window)
	}
	return agent.MemorySettings{WindowTokens: window, ReserveTokens: reserve, Lessons: rt.cfg.Memory.Lessons(), Distill: distill || rt.cfg.Memory.Distill}, nil
}

// PII returns the tool root's tokenizer, nil when the pii section detects
// nothing. An agent's answer holds tokens (its model never saw a real
// value): the embedding program MAY restore them with RestoreString to
// show its user, and MUST NOT send the restored text to a model.
func (rt *Runtime) PII() *pii.Tokenizer { return rt.pii }

// ForgeReport says what became of a forge resumed at start.
type ForgeReport struct {
	Run    string       `json:"run"`
	Result forge.Result `json:"result"`
	Err    string       `json:"error,omitempty"`
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// ResumingForges returns the ids of the forge runs Start resumes in the
// background (none unless Config.ResumeForges).
func (rt *Runtime) ResumingForges() []string { return slices.Clone(rt.resuming) }

// ResumedForges waits for the forges resumed at start and reports them.
func (rt *Runtime) ResumedForges() []ForgeReport {
	rt.bg.Wait()
	rt.resumedMu.Lock()
	defer rt.resumedMu.Unlock()
	return slices.Clone(rt.resumed)
}

// serveForever is the default process's body: it waits (status
// "waiting" in ps) until it is ended or receives a *kernel.Term. Its kernel
// calls come from the embedding program, not from its mailbox, so other
// messages are dropped.
func serveForever(ctx context.Context, p *kernel.Process) error {
	for {
		m, err := p.Recv(ctx)
		if err != nil {
			return nil
		}
		if _, ok := m.Body.(*kernel.Term); ok {
			return nil
		}
	}
}

// DB returns the database exec_sql reaches. IMPORTANT: on SQLite its
// connections run under the tools' policy (see driver.OpenSQLite): BEGIN,
// ATTACH and most PRAGMAs are refused on them.
func (rt *Runtime) DB() *sql.DB { return rt.db }

// Registry returns the tool registry (meta.json, search).
func (rt *Runtime) Registry() *registry.Registry { return rt.reg }

// Repo returns the Git repository the tools persist to (nil without an
// upstream).
func (rt *Runtime) Repo() *repo.Repo { return rt.repo }

// Root returns the absolute tool root.
func (rt *Runtime) Root() string { return rt.root }

// Kernel returns the process table: spawn agent processes, signal them,
// read ps and the recent events.
func (rt *Runtime) Kernel() *kernel.Kernel { return rt.node.Kernel() }

// Node returns the booted node (its actor system and tool calls).
func (rt *Runtime) Node() *kerneltools.Node { return rt.node }

// Journal returns the runtime's journal (replay and trace its runs).
func (rt *Runtime) Journal() *journal.Journal { return rt.j }

// Executor returns the runtime's executor.
func (rt *Runtime) Executor() *executor.Executor { return rt.ex }

// Agent returns the default process.
func (rt *Runtime) Agent() *kernel.Process { return rt.agent }

// Recovered reports what Start did with the runs a crash left unfinished.
func (rt *Runtime) Recovered() []executor.RecoverReport { return rt.recovered }

// Tools returns the kernel tools (SPEC section 1) bound to the default
// process, ready to hand to an LLM SDK: name, description, JSON Schema and
// a call function. names selects tools (none: all).
func (rt *Runtime) Tools(names ...string) ([]kerneltool.Tool, error) {
	return rt.node.Tools(rt.agent, names...)
}

// ToolsFor returns the kernel tools bound to p: its capabilities, its quota.
func (rt *Runtime) ToolsFor(p *kernel.Process, names ...string) ([]kerneltool.Tool, error) {
	return rt.node.Tools(p, names...)
}

// Call runs one kernel tool as the default process, exactly as an LLM tool
// call would.
func (rt *Runtime) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	return rt.node.Call(ctx, rt.agent, tool, args)
}

// MCPServer returns the runtime's MCP server (package mcpserver), made on
// first use: the kernel tools and every registered tool, live, over MCP.
// The node socket serves it at /mcp as the default process; serve it on
// stdio with Run(ctx, rt.Agent(), &mcp.StdioTransport{}) or over HTTP with
// HTTPHandler. Close closes it (first). After Close it is an error.
func (rt *Runtime) MCPServer() (*mcpserver.Server, error) {
	rt.mcpOnce.Do(func() {
		rt.mcpSrv, rt.mcpErr = mcpserver.New(mcpserver.Options{Node: rt.node, Registry: rt.node.RegistryClient(), ToolsDir: rt.cfg.Tools(), Logger: rt.log, PII: rt.pii, Journal: rt.j, Personas: rt.Personas(),
			TasksDir: filepath.Join(rt.root, StateDir, "mcp-tasks")})
	})
	if rt.mcpSrv == nil && rt.mcpErr == nil {
		return nil, mcpserver.ErrClosed
	}
	return rt.mcpSrv, rt.mcpErr
}

// Close stops the runtime in order: every process ends (reason "shutdown")
// and its tool runs are cancelled, leaving their journal runs resumable;
// the actor tree stops; the sandbox workers are killed and waited for; the
// journal is closed cleanly. It is safe to call twice.
func (rt *Runtime) Close() error {
	rt.closeOnce.Do(func() {
		rt.closing.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), CloseTimeout)
		defer cancel()
		rt.closeErr = closeAll(ctx, rt.closers)
	})
	return rt.closeErr
}

// Snapshot snapshots the live process ref (a PID or a registered name)
// through the kernel actor (kernelpb.Snapshot), as agentos snapshot does:
// its name, image, grants and caveats, quota left, waiting messages and
// exposed state, sealed with the node's capability authority and stored in
// the journal as a run of kind "snapshot", whose id restores it. With kill
// the process is ended in the same step (a migration).
func (rt *Runtime) Snapshot(ctx context.Context, ref string, kill bool) (kernelclient.SnapshotInfo, error) {
	return rt.node.KernelClient().Snapshot(ctx, ref, kill, "snapshot")
}

// Restore starts the snapshot id (a unique prefix will do) again as a new
// process of this node, through the kernel actor (kernelpb.Restore), as
// agentos restore does: the same image, name, rights and remaining budget,
// its mailbox and state (see kernel.Kernel.Restore). name ("": the
// snapshot's) registers it under another name. An agent's snapshot resumes
// its journaled run.
//
// A snapshot restores once: a second Restore of it, or one while the
// snapshotted process still runs (a snapshot taken without kill), fails
// with kernel.ErrNotRestorable; Fork runs a copy.
func (rt *Runtime) Restore(ctx context.Context, id, name string) (kernel.PID, error) {
	pid, _, err := rt.node.KernelClient().Restore(ctx, id, name)
	return pid, err
}

// Fork restores a copy of the snapshot id, as agentos restore --fork
// does: like Restore, but the snapshot is not consumed and may have been
// restored before, or its process still run. IMPORTANT: the copy has the
// same rights and remaining budget as the original: a fork duplicates
// them, which is the operator's decision to make.
func (rt *Runtime) Fork(ctx context.Context, id, name string) (kernel.PID, error) {
	pid, _, err := rt.node.KernelClient().Fork(ctx, id, name)
	return pid, err
}
