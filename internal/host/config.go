package host

import (
	"fmt"
	"github.com/agentos-run/agentos/console"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	gitactor "github.com/agentos-run/agentos/actors/git"
	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/actors/registry"
	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/agent/tournament"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/cluster"
	"github.com/agentos-run/agentos/config"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/mcpdriver"
	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/governance/gate"
	"github.com/agentos-run/agentos/internal/scaffold"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/kerneltools"
	"github.com/agentos-run/agentos/mcpserver"
	"github.com/agentos-run/agentos/memory"
	"github.com/agentos-run/agentos/pii"
	"github.com/agentos-run/agentos/telemetry"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Files and directories of a tool root.
const (
	ConfigFile   = scaffold.ConfigFile   // the tool root's configuration
	RegistryFile = scaffold.RegistryFile // the tool registry (filled by the registry)
	DefaultTools = scaffold.DefaultTools // where tools live, mounted at /lib
	StateDir     = scaffold.StateDir     // agentos' own state (journal, caches); never visible to tools
)

// JournalFile is where a tool root's journal lives by default.
var JournalFile = filepath.Join(StateDir, "journal.db")

// QuotaFile is where a tool root keeps quota use across runtimes: what the
// node and each named process with a quota spent of tool_calls, llm_tokens
// and cost_usd (see capability.FileLedger). A runtime holds it open while
// it runs.
var QuotaFile = filepath.Join(StateDir, "quota.db")

// Config is a tool root's configuration, read from agentos.json
// (LoadConfig, through package config: once, decoded once). Every field is
// optional: the zero value is the documented default.
//
// It is the file's schema, composed here as the node is: each section is
// declared, with its JSON tags, defaults and Validate, by the package that
// uses it (the executor's limits, the git repository's, the fetch and sql
// drivers' and the fetch driver's secrets, capability's signing key and
// quotas, the agents', cluster.Config, memory.Config, llm.Section,
// pii.Config, telemetry.Config, the mcp driver's and server's, the
// approval and registration gates', the journal's retention). What is
// declared here is the composition: the top-level keys (whose values the
// sections' packages check: executor.CheckIsolation, capability.Quota, ...),
// the journal's file, DSN and durability, and the translation of the
// sections into each package's options.
type Config struct {
	// ToolsDir is the directory of tools under the root. Default "tools".
	ToolsDir string `json:"tools_dir,omitempty"`
	// Isolation is "process" (default: tools run in sandbox worker processes
	// with hard limits) or "inprocess" (faster, trusted tools only);
	// executor.CheckIsolation checks it.
	Isolation string `json:"isolation,omitempty"`
	// Confine is how sandbox workers confine themselves at the OS level
	// (Landlock, seccomp, no_new_privs): "best_effort" (default: whatever
	// the kernel supports, a warning for what it lacks), "required" (workers
	// refuse to start, so runs fail, without all of them) or "off";
	// executor.CheckConfine checks it.
	Confine string `json:"confine,omitempty"`
	// AllowedImports are bare module names tools may import; each resolves
	// to <tools_dir>/vendor/<name>. Default: none.
	AllowedImports []string `json:"allowed_imports,omitempty"`
	// WriteDirs are root-relative directories tools may write under with
	// tgp.write_file, besides /tmp. Default: none.
	WriteDirs []string `json:"write_dirs,omitempty"`
	// Limits bound every run (see executor.LimitsConfig).
	Limits executor.LimitsConfig `json:"limits,omitzero"`
	// Journal is the journal file, relative to the root. Default
	// ".agentos/journal.db".
	Journal string `json:"journal,omitempty"`
	// JournalPostgresDSNEnv names an environment variable holding the DSN
	// of a PostgreSQL database (postgres://user:pass@host/db) that keeps
	// the journal instead of the Journal file: the journal the nodes of a
	// cluster share, so that any node resumes the runs of a node that died
	// (see journal.OpenPostgres). IMPORTANT: the DSN carries a password, so
	// it never goes in this file. An explicit --journal PATH still opens
	// that file.
	JournalPostgresDSNEnv string `json:"journal_postgres_dsn_env,omitempty"`
	// JournalLease is how long a node's claim on a run it executes lasts
	// in a shared journal unless renewed (every third of it): a node that
	// dies leaves its runs (and forges) to the others once it lapsed, so it
	// bounds how long a forge of a dead node waits before another node
	// resumes it. Default 30s (journal.DefaultLease). Every node of a
	// cluster SHOULD use the same value, and their clocks MUST agree to
	// well within it.
	JournalLease Duration `json:"journal_lease,omitzero"`
	// JournalDurability chooses what a crash can cost the journal
	// (docs/REPLAY.md): "group_commit" (the default; calls, and runs'
	// starts and ends, committed in batches: a crash loses the last
	// milliseconds), "sync_each" (every call, start and end fsynced before
	// it is used: a crash loses nothing anyone saw; about 2 fsyncs each),
	// or "no_sync" (scratch roots: an OS crash may lose more).
	JournalDurability string `json:"journal_durability,omitempty"`
	// JournalSyncRuns, under group_commit and no_sync, commits each run's
	// start and end before the run starts and before its result is
	// returned, so that a crash never loses a run whose caller saw its
	// result (two commits per run).
	JournalSyncRuns bool `json:"journal_sync_runs,omitempty"`
	// Retention bounds the journal. Default: the runs of the last 30 days,
	// at most 1 GiB stored.
	Retention journal.Retention `json:"retention,omitzero"`
	// Agent is the default process: the one `agentos call` and
	// Runtime.Tools run as.
	Agent agent.DefaultProcess `json:"agent,omitzero"`
	// Agents configures spawned agents: personas, the nursery's templates,
	// prompt tournaments (see agent.Config).
	Agents agent.Config `json:"agents,omitzero"`
	// Quota limits the whole node: every process is charged to it. Keys are
	// meters (llm_tokens, tool_calls, cost_usd, children, wall_ms,
	// memory_mb). Default: unlimited.
	Quota capability.Quota `json:"quota,omitempty"`
	// Git is where tools are persisted and shared. Default: not persisted.
	Git repo.Config `json:"git,omitzero"`
	// LLM is the model forge_tool asks. Default: from the environment
	// (AGENTOS_LLM_BASE_URL, AGENTOS_LLM_MODEL, key in AGENTOS_LLM_API_KEY);
	// none configured: forge_tool says so.
	LLM llm.Section `json:"llm,omitzero"`
	// SQL is the database exec_sql reaches. Default: the SQLite file
	// .agentos/data.db.
	SQL driver.SQLConfig `json:"sql,omitzero"`
	// Fetch configures tgp.fetch: which URL prefixes tools may reach.
	Fetch driver.FetchConfig `json:"fetch,omitzero"`
	// Secrets are named credentials tools use without seeing them:
	// tgp.fetch(url, {auth: "name"}) has the fetch driver add the value
	// (from an environment variable) on the way out, and the journal
	// records only the name. See driver.SecretConfig. Default: none.
	Secrets driver.Secrets `json:"secrets,omitempty"`
	// SecretPaths are files or directories, relative to the root, whose
	// content is secret (e.g. "secrets.env", "keys/"): a tool's read of one
	// is journaled as a hash only, and their content is scrubbed by value
	// from the journal. Replaying a run that read one needs the file
	// present with the same content ([AGENTOS-J004] otherwise). Default: none.
	SecretPaths []string `json:"secret_paths,omitempty"`
	// ReuseThreshold is the search score (0..1) above which forge_tool
	// reuses an existing tool instead of forging one. Default 0.85.
	ReuseThreshold float64 `json:"reuse_threshold,omitempty"`
	// Cluster makes the node a member of a cluster of agentos nodes (see
	// ClusterConfig and docs/CLUSTER.md). Default: the node is alone.
	Cluster cluster.Config `json:"cluster,omitzero"`
	// Capability configures capability tokens: the key that signs them.
	// Default: a random key per process (see capability.Config).
	Capability capability.Config `json:"capability,omitzero"`
	// MCP is MCP both ways: upstream MCP servers as code for tools, and
	// agentos as an MCP server (see MCPConfig and docs/MCP.md).
	MCP MCPConfig `json:"mcp,omitzero"`
	// PII replaces personal data in what drivers return by stable tokens
	// before it reaches a model (see PIIConfig). Default: off.
	PII pii.Config `json:"pii,omitzero"`
	// Governance governs forged tools: the approval gate and the
	// registration gate (see GovernanceConfig and docs/GOVERNANCE.md).
	// Default: high- and critical-risk tools wait for an approval, and a
	// changed tool's write replays 5 of its previous version's runs and
	// warns.
	Governance GovernanceConfig `json:"governance,omitzero"`
	// Memory is the agents' memory: context paging and long-term memory
	// (see MemoryConfig). Default: no paging, memory in .agentos/memory.db.
	Memory memory.Config `json:"memory,omitzero"`
	// MetricsAddr, when set (e.g. "127.0.0.1:9464"), serves the runtime's
	// metrics in the Prometheus text format at http://MetricsAddr/metrics.
	MetricsAddr string `json:"metrics_addr,omitempty"`
	// UI is where 'agentos serve' serves the web console (see
	// console.Config and docs/CONSOLE.md). Default: no console.
	UI console.Config `json:"ui,omitzero"`
	// Tracing exports the node's spans over OTLP (see telemetry.Config
	// and docs/RUNTIME.md). Default: off unless OTEL_EXPORTER_OTLP_ENDPOINT
	// is set.
	Tracing telemetry.Config `json:"tracing,omitzero"`

	// Root is the tool root (not read from agentos.json). Default: the
	// current directory.
	Root string `json:"-"`
	// Logger receives the runtime's logs (nil: slog.Default()).
	Logger *slog.Logger `json:"-"`
	// TracerProvider receives spans (nil: the OpenTelemetry global).
	TracerProvider trace.TracerProvider `json:"-"`
	// MeterProvider receives metrics. nil: the runtime makes its own, which
	// Runtime.MetricsHandler and MetricsAddr serve. IMPORTANT: protoactor's
	// own metrics always go to the OpenTelemetry global meter provider.
	MeterProvider metric.MeterProvider `json:"-"`
	// ResumeForges, when set, makes Start resume in the background the
	// forges a crash interrupted (ResumingForges lists them,
	// ResumedForges reports them). IMPORTANT: off by default: a resumed
	// forge sends requests to the configured model (they may be paid), so
	// only a program that serves the root ('agentos serve') or is asked to
	// recover ('agentos recover') sets it; any other start leaves them
	// interrupted, resumable.
	ResumeForges bool `json:"-"`
}

// CapabilityKey returns the capability signing key from the environment
// variable capability.signing_key_env names (capability.Config.Key); nil,
// and no error, when the setting is absent (the runtime then uses a random
// key per process).
func (c Config) CapabilityKey() ([]byte, error) { return c.Capability.Key(nil) }

// ClusterCapabilityKey is CapabilityKey for a node that joins a cluster,
// where the setting is REQUIRED (capability.Config.ClusterKey). Call it
// before joining.
func (c Config) ClusterCapabilityKey() ([]byte, error) { return c.Capability.ClusterKey(nil) }

// Sections declared by the packages that use them, under their former
// names here.
type (
	Duration         = config.Duration
	LLMConfig        = llm.Section
	ClusterConfig    = cluster.Config
	EtcdConfig       = cluster.EtcdConfig
	MemoryConfig     = memory.Config
	PIIConfig        = pii.Config
	MCPServerConfig  = mcpdriver.ServerConfig
	MCPServeConfig   = mcpserver.Config
	ApprovalConfig   = approval.Config
	GateConfig       = gate.Config
	RetentionConfig  = journal.Retention
	LimitsConfig     = executor.LimitsConfig
	GitConfig        = repo.Config
	SQLConfig        = driver.SQLConfig
	FetchConfig      = driver.FetchConfig
	SecretConfig     = driver.SecretConfig
	CapabilityConfig = capability.Config
	AgentConfig      = agent.DefaultProcess
	AgentsConfig     = agent.Config
	AgentTemplate    = agent.Template
	TournamentConfig = tournament.Config
)

// DefaultMaxTokens caps a model answer when llm.max_tokens is not set.
const DefaultMaxTokens = llm.DefaultMaxTokens

// Retention defaults.
const (
	DefaultKeepDays  = journal.DefaultKeepDays
	DefaultKeepBytes = journal.DefaultKeepBytes
)

// SQLitePath returns the SQLite file of the tool root at root.
func (c Config) SQLitePath(root string) string { return c.SQL.SQLitePath(root) }

// JournalPath returns the journal file of the tool root at root.
func (c Config) JournalPath(root string) string {
	if c.Journal != "" {
		return filepath.Join(root, filepath.FromSlash(c.Journal))
	}
	return filepath.Join(root, JournalFile)
}

// DefaultGrants are the default process's rights when the configuration
// names none: read, write and exec under the tools directory, read and
// write under each of write_dirs (a tool runs with its caller's rights, so
// this is what lets the default process's tools write there), spawn, sql,
// llm (forge_tool), fetch (which fetch.allow still limits), and mcp on
// every configured MCP server's tools.
func (c Config) DefaultGrants() []capability.Grant {
	if len(c.Agent.Grants) > 0 {
		return c.Agent.Grants
	}
	scope := c.Tools() + "/"
	grants := []capability.Grant{{Right: capability.Read, Scope: scope}, {Right: capability.Write, Scope: scope}, {Right: capability.Exec, Scope: scope}, {Right: capability.Spawn}, {Right: capability.Fetch}, {Right: capability.SQL}, {Right: capability.LLM}, {Right: capability.MCP}}
	for _, d := range c.WriteDirs {
		if d = filepath.ToSlash(filepath.Clean(d)); d != "." && d != ".." && !strings.HasPrefix(d, "../") && !strings.HasPrefix(d, "/") {
			grants = append(grants, capability.Grant{Right: capability.Read, Scope: d + "/"}, capability.Grant{Right: capability.Write, Scope: d + "/"})
		}
	}
	return grants
}

// MaxArgs returns limits.max_args_bytes or its default.
func (c Config) MaxArgs() int {
	if c.Limits.MaxArgsBytes > 0 {
		return c.Limits.MaxArgsBytes
	}
	return kerneltools.DefaultMaxArgsBytes
}

// PruneOptions returns the retention settings as journal.PruneOptions.
func (c Config) PruneOptions() journal.PruneOptions { return c.Retention.PruneOptions() }

// LoadConfig reads root/agentos.json (config.Load: read once, decoded
// once, then Validate). A missing file is the default Config; an
// unreadable or malformed one, or one with an unknown field, is an error
// naming the file and what to fix: nothing a user wrote is ignored
// silently.
func LoadConfig(root string) (Config, error) {
	var c Config
	err := config.Load(root, &c)
	return c, err
}

// Validate checks the configuration without touching a file: the
// top-level keys, and each section with its own Validate, in the order a
// reader meets them in docs/CONFIG.md; the first error wins. An error
// names the key and what to write instead (LoadConfig adds the file).
func (c Config) Validate() error {
	for _, check := range []func() error{
		func() error { return executor.CheckIsolation(c.Isolation) }, func() error { return executor.CheckConfine(c.Confine) },
		c.Limits.Validate, c.Git.Validate, func() error { return llm.CheckBaseURL(c.LLM.BaseURL) },
		c.Fetch.Validate, c.Secrets.Validate, c.validateSecretPaths, c.MCP.Servers.Validate, c.LLM.Validate,
		c.Tracing.Validate, c.Cluster.Validate, c.PII.Validate, c.Memory.Validate, c.MCP.Serve.Validate,
		c.Agents.Validate, c.Governance.Validate, c.validateJournal, c.Capability.Validate, c.Retention.Validate,
		c.validateReuse, c.validateQuota, c.Agent.Validate, c.validateDirs, c.SQL.Validate,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateJournal checks journal_durability and journal_lease (the
// journal's: journal.ParseDurability, journal.CheckLease).
func (c Config) validateJournal() error {
	if _, err := journal.ParseDurability(c.JournalDurability); err != nil {
		return err
	}
	return journal.CheckLease(time.Duration(c.JournalLease))
}

func (c Config) validateReuse() error {
	if c.ReuseThreshold < 0 || c.ReuseThreshold > 1 {
		return fmt.Errorf("reuse_threshold %g must be between 0 and 1", c.ReuseThreshold)
	}
	return nil
}

// validateQuota checks the node's quota.
func (c Config) validateQuota() error {
	_, err := c.Quota.Limits("quota")
	return err
}

// validateDirs checks that write_dirs, tools_dir and journal stay inside
// the tool root.
func (c Config) validateDirs() error {
	for _, d := range append(append([]string{}, c.WriteDirs...), c.ToolsDir, c.Journal) {
		if !config.InsideRoot(d) {
			return fmt.Errorf("%q must be a directory inside the tool root, written relative to it", d)
		}
	}
	return nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Tools returns the tools directory (default "tools").
func (c Config) Tools() string {
	if c.ToolsDir == "" {
		return DefaultTools
	}
	return filepath.ToSlash(filepath.Clean(c.ToolsDir))
}

// repoOptions turns the git section into the repo's options (repo.Config.Options)
// and adds what the composition root knows: the registry's derived files,
// the tools the git actor holds back, the paths never committed.
func (c Config) repoOptions(root string, regenerate func() error, log *slog.Logger) repo.Options {
	o := c.Git.Options(root)
	o.Derived, o.Regenerate = registry.Files(RegistryFile), regenerate
	o.Hold = gitactor.Compiles // a crash-left tool that does not compile stays local
	o.Ignore, o.Logger = []string{StateDir + "/", c.Tools() + "/.forge/"}, log
	return o
}

// InitOptions configure Init.
type InitOptions struct {
	// Upstream is the Git upstream written into agentos.json. Empty: a bare
	// repository is created beside the tool root (DIR.git) and used. A
	// local one (a path, relative to the tool root or absolute, or a
	// file:// URL) that does not exist is created as a bare repository; one
	// that exists and is not a Git repository is refused.
	Upstream string
	// NoGit leaves Git out: tools are written to the working tree only.
	NoGit bool
}

// Init lays out a tool root in dir (agentos init): agentos.json with every
// default spelled out, the tools directory, meta.json and a .gitignore for
// agentos' state. It is idempotent: existing files are never overwritten,
// and an existing agentos.json must be valid. It returns the paths it
// created. Without Git (NoGit) tools stay in the working tree; otherwise
// agentos.json names opts.Upstream, or a bare repository Init creates
// beside dir (DIR.git). The scaffolding itself is internal/scaffold's; the
// bare repository is made by repo.InitBare, which Init passes it.
func Init(dir string, opts InitOptions) (created []string, err error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, fmt.Errorf("the existing configuration is invalid, fix it first: %w", err)
	}
	return scaffold.Init(dir, scaffold.Options{ToolsDir: cfg.Tools(), Upstream: opts.Upstream, NoGit: opts.NoGit, InitBare: repo.InitBare})
}
