// Package testutil holds the helpers the tests of several packages share.
// It is imported by tests only.
package testutil

import (
	"testing"
	"time"
)

// Eventually polls cond until it holds, failing t (Fatalf, naming what)
// when it still does not after timeout. It is how a test waits for
// something to happen (an actor restarted, a run parked, a file written):
// IMPORTANT: a test MUST wait for a state this way, never by sleeping a
// fixed time and hoping it was long enough. timeout only bounds a test
// that would otherwise hang; it is no assertion on speed, so make it
// generous (seconds): the machine running the tests may be loaded.
//
// cond is called from the test's goroutine, first at once, then with a
// growing pause (1 ms doubling up to 20 ms).
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
}
