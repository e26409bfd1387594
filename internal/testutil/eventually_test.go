package testutil

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Eventually returns once cond holds, calling it until then.
func TestEventuallyWaitsForTheCondition(t *testing.T) {
	var calls atomic.Int32
	Eventually(t, 10*time.Second, "the third call", func() bool { return calls.Add(1) >= 3 })
	if got := calls.Load(); got != 3 {
		t.Fatalf("cond called %d times, want 3", got)
	}
}

// recorder is a testing.TB whose Fatalf records the message and ends the
// goroutine, like the real one.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(r)
}

// A condition that never holds fails the test, naming what was awaited.
func TestEventuallyFailsNamingWhat(t *testing.T) {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != r {
				t.Fatalf("Eventually returned or panicked with %v, want Fatalf", p)
			}
		}()
		Eventually(r, 10*time.Millisecond, "the impossible", func() bool { return false })
	}()
	if !strings.Contains(r.msg, "the impossible") {
		t.Fatalf("failure %q does not name what was awaited", r.msg)
	}
}
