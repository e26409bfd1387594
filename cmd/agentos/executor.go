package main

import (
	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/internal/host"
)

// toolExecutor starts the executor of the tool root from its configuration
// through agentos.OpenExecutorSetup, the one place that assembles a tool's
// drivers (sql, fetch and its secrets, fs, clock, random), so that a tool
// run by exec, replay, recover or the demo sees what it sees under serve
// and call. adjust (may be nil) changes what the command needs (workers,
// isolation). The caller MUST call stop when done.
//
// IMPORTANT: in a directory that is not a tool root (exec --no-journal runs
// there) nothing may be created, so the embedded database is not opened:
// tgp.exec_sql then answers that no sql driver is configured.
func toolExecutor(absRoot string, cfg host.Config, adjust func(*executor.Options)) (ex *executor.Executor, stop func(), err error) {
	var setup *host.ExecutorSetup
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
