// Package e2e holds agentos's end-to-end scenarios: each starts a real tool
// root (internal/host, the composition root) and drives it as an embedding
// program, the CLI or a cluster member would. Run them with
// go test ./tests/e2e (they are part of go test ./...). The whole-node
// benchmarks are in tests/bench; the fixtures both use are in
// tests/internal/scenario.
package e2e
