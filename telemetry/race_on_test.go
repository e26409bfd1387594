//go:build race

package telemetry_test

// raceEnabled: the tests run under the race detector.
const raceEnabled = true
