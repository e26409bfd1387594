// Package benchutil holds helpers for the project's benchmarks.
package benchutil

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime returns the CPU time (user + system) this process has used, all
// threads included.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ReportCPU reports, as "cpu-µs/op", the process CPU time spent since start
// divided by b.N. Wall time per op hides work moved to background
// goroutines (such as preparing the next runtime); CPU time does not, and
// on a shared, noisy machine it is the steadier of the two.
func ReportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(CPUTime()-start)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}
