package testutil

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Pause stops process pid (SIGSTOP: a paused VM, a hung node) and waits
// until every one of its threads is stopped. IMPORTANT: a test that then
// expects silence MUST pause through here: kill(2) returns before the
// stop takes effect, and on a loaded machine a thread of a Go process (its
// network poller) went on answering a request sent right after the signal
// (CI, 2026-12-05: a paused member's processes page answered 200).
//
// Outside Linux it only sends the signal.
func Pause(t testing.TB, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("pausing process %d: %v", pid, err)
	}
	tasks := filepath.Join("/proc", strconv.Itoa(pid), "task")
	if _, err := os.Stat(tasks); err != nil {
		return // no procfs: nothing to wait on
	}
	Eventually(t, 10*time.Second, "every thread of process "+strconv.Itoa(pid)+" to stop", func() bool {
		return allStopped(tasks)
	})
}

// allStopped reports whether every thread under tasks (/proc/PID/task) is
// stopped (state T) or gone.
func allStopped(tasks string) bool {
	ents, err := os.ReadDir(tasks)
	if err != nil {
		return false
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(tasks, e.Name(), "stat"))
		if err != nil {
			continue // the thread ended
		}
		// "pid (comm) state ...": comm may hold spaces and parentheses.
		i := strings.LastIndex(string(b), ") ")
		if i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
			return false
		}
	}
	return true
}
