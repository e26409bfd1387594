//go:build race

package agentos_test

// raceEnabled: the tests run under the race detector (5-10x slower).
const raceEnabled = true
