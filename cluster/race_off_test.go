//go:build !race

package cluster

// raceEnabled: the tests run under the race detector.
const raceEnabled = false
