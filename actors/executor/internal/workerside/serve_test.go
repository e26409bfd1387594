package workerside

import (
	"runtime/debug"
	"testing"
)

// TestWorkerGCPercent: a worker under a memory limit collects at
// workerGCPercent, unless its environment sets GOGC.
func TestWorkerGCPercent(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	setGCPercent(func(string) (string, bool) { return "", false })
	if got := debug.SetGCPercent(100); got != workerGCPercent {
		t.Fatalf("GOGC unset: the worker collects at %d%%, want %d%%", got, workerGCPercent)
	}
	setGCPercent(func(k string) (string, bool) { return "50", k == "GOGC" })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC=50 in the environment: the worker set %d%%, want the runtime's own (100%% here)", got)
	}
}
