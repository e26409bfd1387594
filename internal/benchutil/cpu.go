// Package benchutil holds helpers for the project's benchmarks.
package benchutil

import (
	"slices"
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

// CPUTimes returns the user and the system CPU time this process has
// used, all threads included.
func CPUTimes() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// ReportCPUSplit reports "cpu-µs/op" and, beside it, its two parts:
// "user-µs/op" (the program's own work) and "sys-µs/op" (the kernel's on
// its behalf: file creation, fsync, pipes), since start (from CPUTimes).
// On a shared machine the kernel's part grows with the other tenants'
// I/O (file creation waits on the filesystem's journal), the user part
// much less.
func ReportCPUSplit(b *testing.B, user, sys time.Duration) {
	u, s := CPUTimes()
	n := float64(b.N) * float64(time.Microsecond)
	b.ReportMetric(float64(u-user+s-sys)/n, "cpu-µs/op")
	b.ReportMetric(float64(u-user)/n, "user-µs/op")
	b.ReportMetric(float64(s-sys)/n, "sys-µs/op")
}

// Laps times each iteration of a benchmark, for its median: a peer that
// reports the median of its runs is compared with ours, not with the mean
// ns/op, which the slowest iterations (a collection, the first run's
// warm-up) pull up. The zero value is ready for use.
type Laps struct {
	start time.Time
	d     []time.Duration
}

// Start starts timing an iteration.
func (l *Laps) Start() { l.start = time.Now() }

// Stop ends the iteration Start started.
func (l *Laps) Stop() { l.d = append(l.d, time.Since(l.start)) }

// Report reports the median iteration as "median-ns/op" (nothing when no
// iteration was timed).
func (l *Laps) Report(b *testing.B) { ReportMedian(b, l.d, "median-ns/op", time.Nanosecond) }

// ReportMedian reports the median of d, in units of per, as the metric
// unit (nothing when d is empty). It sorts d.
func ReportMedian(b *testing.B, d []time.Duration, unit string, per time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2])/float64(per), unit)
}
