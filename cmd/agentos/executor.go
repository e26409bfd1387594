package main

import (
	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/internal/host"
)

// toolExecutor starts the executor of the tool root from its configuration
// (host.OpenExecutor: the composition root assembles it, as it does for
// serve and call). adjust (may be nil) changes what the command needs
// (workers, isolation). The caller MUST call stop when done.
func toolExecutor(absRoot string, cfg host.Config, adjust func(*executor.Options)) (ex *executor.Executor, stop func(), err error) {
	return host.OpenExecutor(absRoot, cfg, adjust)
}
