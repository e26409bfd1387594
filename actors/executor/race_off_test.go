//go:build !race

package executor

// raceEnabled: the race detector is on (its shadow memory counts in RSS).
const raceEnabled = false
