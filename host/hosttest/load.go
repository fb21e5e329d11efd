package hosttest

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// Load runs call b.N times from clients goroutines and reports calls per
// second and the p50 and p99 latency of single calls (b.ReportMetric).
func Load(b *testing.B, clients int, call func() error) {
	b.Helper()
	per := max(b.N/clients, 1)
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			mine := make([]time.Duration, 0, per)
			for range per {
				t0 := time.Now()
				if err := call(); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(lat) == 0 {
		return
	}
	el := time.Since(start)
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/el.Seconds(), "calls/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
