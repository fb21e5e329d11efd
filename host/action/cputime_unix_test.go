//go:build unix

package action_test

import (
	"syscall"
	"testing"
	"time"
)

// reportCPU adds a cpu-ns/op metric: process CPU time (user+system, GC
// included) per op, which, unlike ns/op, does not grow when other processes
// compete for the cores. Call start before the loop and the returned func
// after it.
func reportCPU(b *testing.B) func() {
	start := cpuNow()
	return func() {
		b.ReportMetric(float64((cpuNow()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
