//go:build unix

package journal

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// hostGone reports whether no live process is the host h names: there is
// no process with its pid (or only a zombie), or the one with its pid
// started after h took the run (the pid was reused).
func hostGone(h Host) bool {
	if err := syscall.Kill(h.PID, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(h.PID) + "/stat")
	if err != nil {
		return false // not Linux, or not readable: the process exists
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is the first, starttime (clock ticks after boot)
	// the 20th.
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return false
	}
	if f[0] == "Z" || f[0] == "X" {
		return true // dead, waiting for its parent to reap it
	}
	if h.Since.IsZero() {
		return false
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64)
	boot := bootTime()
	if err != nil || boot.IsZero() {
		return false
	}
	// USER_HZ is 100 on every Linux; the boot time is in whole seconds:
	// allow two seconds of slack.
	started := boot.Add(time.Duration(ticks) * 10 * time.Millisecond)
	return started.After(h.Since.Add(2 * time.Second))
}

// bootTime is when the machine booted (zero where /proc/stat does not
// say).
func bootTime() time.Time {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return time.Unix(n, 0)
			}
		}
	}
	return time.Time{}
}
