package action_test

import (
	"testing"

	"github.com/agenthost/agenthost/host/internal/cputime"
)

// reportCPU adds a cpu-ns/op metric: process CPU time (user+system, GC
// included) per op, which, unlike ns/op, does not grow when other processes
// compete for the cores. Call start before the loop and the returned func
// after it.
func reportCPU(b *testing.B) func() {
	start := cputime.Process()
	return func() {
		b.ReportMetric(float64((cputime.Process()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}
