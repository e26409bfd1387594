//go:build !race

package scenario

// RaceEnabled says the tests run under the race detector (5-10x slower).
const RaceEnabled = false
