package host

import (
	"fmt"
	"log/slog"

	"github.com/agentos-run/agentos/actors/executor"
	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/governance/gate"
	"github.com/agentos-run/agentos/journal"
)

// newGate is the registration gate replaying through the executor actor
// ex (whose journal is j), its replays in parallel capped at the
// executor's workers (a replay beyond them would only wait for one).
func newGate(ex *execclient.Client, workers int, j *journal.Journal, opts gate.Options) (*gate.Gate, error) {
	if opts.Parallel <= 0 {
		opts.Parallel = gate.DefaultParallel
	}
	if workers > 0 {
		opts.Parallel = min(opts.Parallel, workers)
	}
	return gate.New(ex, j, opts)
}

// OpenGate is a registration gate over ex and j for a program without a
// node (agentos check --against-runs): it starts an actor system holding an
// executor actor on ex (journal j) for the gate to send its replays to.
// stop stops them; ex and j are the caller's to close, after stop.
func OpenGate(ex *executor.Executor, j *journal.Journal, opts gate.Options, logger *slog.Logger) (g *gate.Gate, stop func(), err error) {
	sys := system.New(system.Options{Logger: logger})
	pid, err := sys.SpawnNamed(executor.Props(ex, executor.ActorOptions{Journal: j}), "executor")
	if err != nil {
		_ = sys.Shutdown(0)
		return nil, nil, fmt.Errorf("the registration gate's executor actor did not start: %w", err)
	}
	if g, err = newGate(execclient.New(sys.Root(), pid), ex.Options().Workers, j, opts); err != nil {
		_ = sys.Shutdown(0)
		return nil, nil, err
	}
	return g, func() { _ = sys.Shutdown(0) }, nil
}
