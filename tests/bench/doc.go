// Package bench holds agentos's whole-node benchmarks: each starts a real
// tool root (internal/host, the composition root) and times what an
// embedding program, the CLI or a cluster member does. docs/PERFORMANCE.md
// gives the command and the figure of each. They share their fixtures with
// the end-to-end scenarios (tests/e2e) through tests/internal/scenario.
// Run one with go test ./tests/bench -run '^$' -bench Name; a plain go test
// runs none.
package bench
