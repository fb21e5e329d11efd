package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkCall is POST /v1/tools/core:echo/call on loopback with a
// reused connection, against host.Call of the same tool in the same run.
func BenchmarkCall(b *testing.B) {
	fixtureMaxConcurrent = 64
	defer func() { fixtureMaxConcurrent = 2 }()
	f := newFixture(b, filepath.Join(b.TempDir(), "db"))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	call := func() {
		req, _ := http.NewRequest("POST", f.srv.URL+"/v1/tools/core:echo/call", strings.NewReader(`{"a":1}`))
		req.Header.Set("Authorization", "Bearer acme-token")
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatal(resp.Status)
		}
	}
	call()
	b.Run("http", func(b *testing.B) {
		for b.Loop() {
			call()
		}
	})
	b.Run("host", func(b *testing.B) {
		h := f.hosts["acme"]
		for b.Loop() {
			h.Call(context.Background(), "core:echo", json.RawMessage(`{"a":1}`))
		}
	})
	b.Run("load", func(b *testing.B) {
		// 16 clients for a fixed time: calls per second and the latency
		// percentiles of every call.
		const clients = 16
		var mu sync.Mutex
		var lat []time.Duration
		b.ResetTimer()
		start := time.Now()
		var wg sync.WaitGroup
		per := max(b.N/clients, 1)
		for range clients {
			wg.Go(func() {
				mine := make([]time.Duration, 0, per)
				for range per {
					t0 := time.Now()
					call()
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
		}
		wg.Wait()
		el := time.Since(start)
		slices.Sort(lat)
		b.ReportMetric(float64(len(lat))/el.Seconds(), "calls/s")
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	})
}
