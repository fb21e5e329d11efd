package host_test

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkMixedLoadRaw is BenchmarkMixedLoad's floor: the same calls on
// bare wazero instances (rawReused: one instance per call, reused with
// nothing restored, metered or checked), each alone (back to back) and
// round-robin, in alternating passes. Whatever ratio of round-robin to
// alone it shows is the machine's (each call's code and data evicted
// from the core's caches by the ten other modules between two of its
// calls), not the host's.
func BenchmarkMixedLoadRaw(b *testing.B) {
	h := firstPartyHost(b)
	ws := h.Policy().Workspace
	n := len(firstPartyCalls)
	calls := make([]func([]byte), n)
	for i, c := range firstPartyCalls {
		tool, err := h.Tool(c.tool)
		if err != nil {
			b.Fatal(err)
		}
		calls[i] = rawReused(b, tool.ModulePath(), ws)
	}
	timed := func(i int) float64 {
		t0 := time.Now()
		calls[i]([]byte(firstPartyCalls[i].args))
		return float64(time.Since(t0).Nanoseconds()) / 1000
	}
	for i := range n {
		for range 20 {
			timed(i)
		}
	}
	var worst, med []float64
	perCall, aloneUs, mixedUs := make([][]float64, n), make([][]float64, n), make([][]float64, n)
	for b.Loop() {
		alone := make([]float64, n)
		for i := range n {
			var d []float64
			for range 30 {
				d = append(d, timed(i))
			}
			alone[i] = median(d[10:])
		}
		mixed := make([][]float64, n)
		for range 30 {
			for i := range n {
				mixed[i] = append(mixed[i], timed(i))
			}
		}
		var r []float64
		for i := range n {
			m := median(mixed[i])
			q := m / alone[i]
			r = append(r, q)
			perCall[i] = append(perCall[i], q)
			aloneUs[i], mixedUs[i] = append(aloneUs[i], alone[i]), append(mixedUs[i], m)
		}
		worst = append(worst, slices.Max(r))
		med = append(med, median(r))
	}
	b.ReportMetric(median(worst), "worst-ratio")
	b.ReportMetric(median(med), "median-ratio")
	for i, c := range firstPartyCalls {
		b.Logf("%-18s round-robin / alone %.2f (%.0f / %.0f µs)", callName(c.tool, c.args), median(perCall[i]), median(mixedUs[i]), median(aloneUs[i]))
	}
}
