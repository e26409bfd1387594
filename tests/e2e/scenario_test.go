package e2e_test

import "github.com/agentos-run/agentos/tests/internal/scenario"

// The fixtures shared with the benchmarks (tests/bench) live in
// tests/internal/scenario; the scenarios call them by these short names.
var (
	quiet            = scenario.Quiet
	upstream         = scenario.Upstream
	upstreamTree     = scenario.UpstreamTree
	freePorts        = scenario.FreePorts
	testCluster      = scenario.Cluster
	forgeOn          = scenario.ForgeOn
	writeFib         = scenario.WriteFib
	tournamentModel  = scenario.TournamentModel
	tournamentStep   = scenario.TournamentStep
	tournamentTasks  = scenario.TournamentTasks
	basePersonaValue = scenario.BasePersona
)

const (
	raceEnabled = scenario.RaceEnabled
	gateTool    = scenario.GateTool
	gateBuggy   = scenario.GateBuggy
)
