package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
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

// Pause returns only once every thread of the process is stopped, and the
// process then makes no progress until it is continued.
func TestPauseWaitsForEveryThread(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("no procfs here: Pause only sends the signal")
	}
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sh to run: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	Pause(t, cmd.Process.Pid)
	if !allStopped(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "task")) {
		t.Fatal("Pause returned before every thread stopped")
	}
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 10*time.Second, "the process to run again", func() bool {
		return !allStopped(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "task"))
	})
}
