package host_test

import (
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
	mixedRounds(b, n, timed)
}
