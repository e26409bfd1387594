package host

import (
	"database/sql"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/mcpdriver"
	"github.com/agentos-run/agentos/pii"
)

// ExecutorOptions returns the executor options for the tool root at root
// that need no open resource: everything but the sql driver's session.
// IMPORTANT: an entry point that runs tools MUST use OpenExecutorSetup
// instead, which adds the sql session (see ExecutorSetup).
func (c Config) ExecutorOptions(root string) executor.Options {
	return executor.Options{
		Root:           root,
		ToolsDir:       c.Tools(),
		Isolation:      executor.Isolation(c.Isolation),
		Confine:        executor.Confine(c.Confine),
		AllowedImports: c.AllowedImports,
		WriteDirs:      c.WriteDirs,
		Limits:         c.Limits.Limits(),
		Devices: map[string]driver.Device{
			driver.FetchDriver: c.Fetch.Device(c.Secrets.Bind(nil)),
		},
		Bindings:       append([]executor.Binding{executor.FetchBinding, executor.SQLBinding}, executor.MCPBindings...),
		Logger:         c.Logger,
		TracerProvider: c.TracerProvider,
		MeterProvider:  c.MeterProvider,
		Commit:         gitHead(root),
	}
}

// CheckOptions returns the check_tool options of the tool root.
func (c Config) CheckOptions() check.Options {
	return check.Options{AllowedImports: c.AllowedImports}
}

// ExecutorSetup is what the executor of a tool root is built from: its
// options, complete (limits, isolation, confinement, tools directory,
// imports, write_dirs, and every driver a tool reaches: fs, clock and
// random built in, fetch with its allow-list and secrets, sql with the
// configured database, mcp with the configured MCP servers and their
// generated modules mounted at /mcp), and the resources those drivers hold.
//
// IMPORTANT: every entry point that runs tools (Start, and the CLI's exec,
// replay, recover and demo) MUST build its executor from OpenExecutorSetup
// (or, where nothing may be created, ExecutorSetupWithoutDatabase) and
// start it with NewExecutor, so that a tool sees the same drivers however
// it is run. An entry point
// MAY adjust Options afterwards (workers, isolation) but MUST NOT assemble
// drivers of its own.
type ExecutorSetup struct {
	// Options are the executor's options: pass them to executor.New.
	Options executor.Options
	// DB is the database tgp.exec_sql reaches (SQLite, or PostgreSQL with
	// sql.postgres_dsn_env). Close closes it.
	DB *sql.DB
	// SQL is the sql driver over DB, also behind the kernel tool exec_sql.
	// It is not wrapped by PII: the kernel tool's results are tokenized
	// where they reach a model (package agent, the forge).
	SQL *driver.SQL
	// MCP is the mcp driver over mcp.servers (nil: none configured), also
	// behind the kernel's list_files/read_file/search_tools on /mcp. It
	// connects lazily; Close ends its sessions (stdio servers exit).
	MCP *mcpdriver.Client
	// PII is the tool root's tokenizer (nil: the pii section detects
	// nothing). Every device and session of Options but the built-in fs,
	// clock and random is wrapped by it (pii.Tokenizer.Device, Session),
	// below the journal's middleware. Pass it to kerneltools.Options.PII and
	// agent.ProcessOptions.PII so that what reaches a model is tokenized.
	PII *pii.Tokenizer

	piiMap *pii.BoltMap
}

// OpenExecutorSetup builds the executor setup of the tool root at root
// (absolute) from the configuration, opening the configured database. log
// receives the database's warnings (nil: c.Logger, else slog.Default()).
// The caller MUST Close the setup after the executor built from it.
func (c Config) OpenExecutorSetup(root string, log *slog.Logger) (*ExecutorSetup, error) {
	if log == nil {
		log = c.Logger
	}
	if log == nil {
		log = slog.Default()
	}
	db, err := driver.OpenDatabase(c.SQL.DatabaseOptions(root, log))
	if err != nil {
		return nil, err
	}
	s := &ExecutorSetup{Options: c.ExecutorOptions(root), DB: db, SQL: c.SQL.Session(db)}
	s.Options.Sessions = map[string]driver.Session{driver.SQLDriver: s.SQL}
	if s.MCP, err = c.mcpClient(root, true); err != nil {
		db.Close()
		return nil, err
	}
	s.addMCP()
	// IMPORTANT: keep this last, after every device and session is in
	// Options, so that each one is wrapped.
	if s.PII, s.piiMap, err = c.OpenPII(root); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.wrapPII()
	return s, nil
}

// wrapPII wraps every device and session of the options with the
// tokenizer: their responses are tokenized, their requests restored when
// pii.restore_to covers them. The executor chains the journal's middleware
// above its mux of these devices, so the journal records tokens only and a
// replay (which calls no device) needs no token map.
func (s *ExecutorSetup) wrapPII() {
	if s.PII == nil {
		return
	}
	devs := make(map[string]driver.Device, len(s.Options.Devices))
	for name, d := range s.Options.Devices {
		devs[name] = s.PII.Device(name, d)
	}
	s.Options.Devices = devs
	sess := make(map[string]driver.Session, len(s.Options.Sessions))
	for name, d := range s.Options.Sessions {
		sess[name] = s.PII.Session(name, d)
	}
	s.Options.Sessions = sess
}

// addMCP adds the mcp driver and its /mcp mount to the options.
func (s *ExecutorSetup) addMCP() {
	if s.MCP == nil {
		return
	}
	devices := maps.Clone(s.Options.Devices)
	devices[mcpdriver.Name] = s.MCP
	s.Options.Devices = devices
	s.Options.Mounts = map[string]driver.Mount{mcpdriver.Mount: s.MCP}
}

// ExecutorSetupWithoutDatabase is OpenExecutorSetup without the sql
// driver: nothing is opened or created, and tgp.exec_sql answers that no
// sql driver is configured. It is for running a tool in a directory that is
// not a tool root, where opening the embedded database would create
// .agentos/data.db (the CLI's exec --no-journal there).
//
// The mcp driver is there, without its tool list cache (which would create
// .agentos/mcp).
func (c Config) ExecutorSetupWithoutDatabase(root string) *ExecutorSetup {
	s := &ExecutorSetup{Options: c.ExecutorOptions(root)}
	// The configuration was validated: the servers are valid.
	s.MCP, _ = c.mcpClient(root, false)
	s.addMCP()
	return s
}

// NewExecutor starts an executor from the setup's options, after adjust (if
// not nil) changed what its entry point needs (e.g. Workers, Isolation).
func (s *ExecutorSetup) NewExecutor(adjust func(*executor.Options)) (*executor.Executor, error) {
	opts := s.Options
	if adjust != nil {
		adjust(&opts)
	}
	return executor.New(opts)
}

// Close releases the setup's resources (the database, the MCP sessions and
// the stdio servers' processes, the token map). Close the executor first.
func (s *ExecutorSetup) Close() error {
	if s == nil {
		return nil
	}
	var errs []error
	if s.MCP != nil {
		errs = append(errs, s.MCP.Close())
	}
	if s.DB != nil {
		errs = append(errs, s.DB.Close())
	}
	if s.piiMap != nil {
		errs = append(errs, s.piiMap.Close())
	}
	return errors.Join(errs...)
}

// OpenExecutor starts the executor of the tool root absRoot from cfg
// through OpenExecutorSetup, the one place that assembles a tool's drivers
// (sql, fetch and its secrets, fs, clock, random), so that a tool run by
// exec, replay, recover or the demo sees what it sees under serve and
// call. adjust (may be nil) changes what the caller needs (workers,
// isolation). The caller MUST call stop when done.
//
// IMPORTANT: in a directory that is not a tool root (no agentos.json:
// exec --no-journal runs there) nothing may be created, so the embedded
// database is not opened: tgp.exec_sql then answers that no sql driver is
// configured.
func OpenExecutor(absRoot string, cfg Config, adjust func(*executor.Options)) (ex *executor.Executor, stop func(), err error) {
	var setup *ExecutorSetup
	if !isToolRoot(absRoot) && cfg.SQL.PostgresDSNEnv == "" {
		setup = cfg.ExecutorSetupWithoutDatabase(absRoot) // the embedded database would create <dir>/.agentos/data.db
	} else if setup, err = cfg.OpenExecutorSetup(absRoot, nil); err != nil {
		return nil, nil, err
	}
	if ex, err = setup.NewExecutor(adjust); err != nil {
		setup.Close()
		return nil, nil, err
	}
	return ex, func() { ex.Close(); setup.Close() }, nil
}

// isToolRoot reports whether dir holds an agentos.json.
func isToolRoot(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, ConfigFile))
	return err == nil && !fi.IsDir()
}
