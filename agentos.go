package agentos

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/agentos-run/agentos/actors/kernel"
	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/actors/kernel/proc"
	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/kerneltool"
	"github.com/agentos-run/agentos/mcpserver"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Config is a tool root's configuration: agentos.json, every key documented
// in docs/CONFIG.md. LoadConfig reads and validates one.
type Config = host.Config

// LoadConfig reads root's agentos.json (the defaults when there is none)
// and validates it; an error names the key, its line and column, and what
// was expected.
func LoadConfig(root string) (Config, error) { return host.LoadConfig(root) }

// Options configure Start. A nil *Options, and every zero field, mean the
// defaults: the current directory as the tool root, its agentos.json, the
// default logger and the OpenTelemetry globals.
type Options struct {
	// Root is the tool root ("": the current directory). It overrides
	// Config.Root.
	Root string
	// Config is the configuration (nil: the tool root's agentos.json,
	// read with LoadConfig; the defaults when it has none).
	Config *Config
	// Logger receives the runtime's logs (nil: Config.Logger, else
	// slog.Default).
	Logger *slog.Logger
	// TracerProvider and MeterProvider receive the kernel calls' spans and
	// metrics (nil: Config's, else the OpenTelemetry globals for traces and
	// the runtime's own Prometheus registry for metrics).
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
}

// config resolves the options into the configuration host.Start takes.
func (o *Options) config() (Config, error) {
	if o == nil {
		o = &Options{}
	}
	var cfg Config
	if o.Config != nil {
		cfg = *o.Config
	} else {
		root := o.Root
		if root == "" {
			root = "."
		}
		var err error
		if cfg, err = host.LoadConfig(root); err != nil {
			return Config{}, err
		}
	}
	if o.Root != "" {
		cfg.Root = o.Root
	}
	if o.Logger != nil {
		cfg.Logger = o.Logger
	}
	if o.TracerProvider != nil {
		cfg.TracerProvider = o.TracerProvider
	}
	if o.MeterProvider != nil {
		cfg.MeterProvider = o.MeterProvider
	}
	return cfg, nil
}

// Runtime is a running agentos node seen by an embedding program: the
// kernel tools bound to a default process, agents run as processes, the
// node socket and MCP server, snapshots. Its methods are safe for
// concurrent use. Everything else (the journal, the registry, the actor
// tree) is the node's own and is reached through its messages by the
// packages that need it.
type Runtime struct {
	h *host.Runtime
}

// Start boots a node over the tool root of opts (nil: the current
// directory, its agentos.json): it creates the tools and state directories
// when missing, brings the tools up to date from the Git upstream if one is
// configured, resumes the runs a crash left unfinished and spawns the
// default process. ctx bounds only the start; Close stops the node.
//
// IMPORTANT: with process isolation (the default) the program MUST call
// executor.WorkerMain at the start of main (see package executor).
func Start(ctx context.Context, opts *Options) (*Runtime, error) {
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	h, err := host.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Runtime{h: h}, nil
}

// Call runs one kernel tool as the default process, exactly as an LLM tool
// call would.
func (rt *Runtime) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	return rt.h.Call(ctx, tool, args)
}

// Tools returns the kernel tools bound to the default process, ready to
// hand to an LLM SDK: name, description, JSON Schema and a call function.
// names selects tools (none: all).
func (rt *Runtime) Tools(names ...string) ([]kerneltool.Tool, error) { return rt.h.Tools(names...) }

// AgentOptions configure RunAgent (the zero value: the default grants and
// quota, 20 steps).
type AgentOptions = host.AgentOptions

// RunAgent runs task as a new agent process: a model calling the kernel
// tools under the process's capabilities and quota until it answers. It
// needs a model (llm in agentos.json, or AGENTOS_LLM_MODEL).
func (rt *Runtime) RunAgent(ctx context.Context, task string, opts AgentOptions) (agent.Result, error) {
	return rt.h.RunAgent(ctx, task, opts)
}

// SpawnOptions configure Spawn.
type SpawnOptions = host.SpawnOptions

// Spawn runs task as an agent of the template name (agents.templates),
// never with more rights or budget than its spawner.
func (rt *Runtime) Spawn(ctx context.Context, name, task string, opts SpawnOptions) (agent.Result, error) {
	return rt.h.Spawn(ctx, name, task, opts)
}

// Serve answers the agentos CLI on the tool root's node socket until ctx
// ends (see package admin).
func (rt *Runtime) Serve(ctx context.Context) error { return rt.h.Serve(ctx) }

// MCPServer returns the node's MCP server, made on first use: the kernel
// tools and every registered tool, live, over MCP. Close closes it.
func (rt *Runtime) MCPServer() (*mcpserver.Server, error) { return rt.h.MCPServer() }

// UIHandler returns the node's web console (docs/CONSOLE.md): Runs, a
// run's timeline and its replay against an edited source. Every request
// needs a login with a capability token of the node; its session cookie is
// Secure, so serve the handler over HTTPS (agentos serve --ui serves it on
// plain HTTP on loopback).
func (rt *Runtime) UIHandler() http.Handler { return rt.h.UIHandler() }

// Snapshot seals the live process ref (a PID or a registered name) in the
// journal and returns the snapshot's id; with kill the process ends in the
// same step.
func (rt *Runtime) Snapshot(ctx context.Context, ref string, kill bool) (kernelclient.SnapshotInfo, error) {
	return rt.h.Snapshot(ctx, ref, kill)
}

// Restore starts the snapshot id once again as a new process, under name
// ("": the snapshot's), with the rights and budget it had.
func (rt *Runtime) Restore(ctx context.Context, id, name string) (proc.PID, error) {
	return rt.h.Restore(ctx, id, name)
}

// Kernel returns the process table, for process work: spawn agent
// processes, signal them, read ps and the recent events.
func (rt *Runtime) Kernel() *kernel.Kernel { return rt.h.Kernel() }

// Close stops the node: every process ends (reason "shutdown"), the actor
// tree stops, the sandbox workers are killed and the journal is closed. It
// is safe to call twice.
func (rt *Runtime) Close() error { return rt.h.Close() }
