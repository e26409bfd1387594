//go:build !race

package e2e_test

// raceEnabled: the tests run under the race detector (5-10x slower).
const raceEnabled = false
