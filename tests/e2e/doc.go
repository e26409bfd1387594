// Package e2e holds agentos's end-to-end scenarios and whole-node benchmarks: each
// a real tool root (internal/host, the composition root) and drives it as an
// embedding program, the CLI or a cluster member would. Run them with
// go test ./tests/e2e (they are part of go test ./...).
package e2e
