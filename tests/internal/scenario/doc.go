// Package scenario holds the fixtures the end-to-end scenarios (tests/e2e)
// and the whole-node benchmarks (tests/bench) share: a bare Git upstream, a
// cluster of nodes on loopback, the scripted tournament model, the gate's
// buggy tool. IMPORTANT: it is imported only by _test files under tests/;
// every helper takes a testing.TB and fails it rather than returning an
// error, and everything it starts is stopped by the test's Cleanup.
package scenario
