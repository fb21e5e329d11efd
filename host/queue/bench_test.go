package queue_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/queue"
)

// BenchmarkQueue is core:echo from 16 concurrent callers, through the
// NATS work queue to two workers (embedded nats-server, all on this
// machine), against the same calls on an in-process host in the same
// run: calls per second and p99.
func BenchmarkQueue(b *testing.B) {
	url := startNATSB(b)
	o := queue.Options{Concurrency: 8}
	ctx := context.Background()
	nc := connectB(b, url)
	d, err := queue.NewDispatcher(ctx, nc, o)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 2 {
		startWorkerB(b, url, []string{"A", "B"}[i], o)
	}
	local, err := host.New(ctx, host.Options{Dirs: []string{hosttest.Toolpacks(b)}, CacheDir: hosttest.CacheDir(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close(ctx)
	args := json.RawMessage(`{"a":1}`)
	load := func(b *testing.B, call func() error) {
		const clients = 16
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
		el := time.Since(start)
		slices.Sort(lat)
		b.ReportMetric(float64(len(lat))/el.Seconds(), "calls/s")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
	b.Run("local", func(b *testing.B) {
		load(b, func() error { local.Call(ctx, "core:echo", args); return nil })
	})
	b.Run("nats", func(b *testing.B) {
		load(b, func() error {
			_, err := d.Call(ctx, "acme", "core:echo", args)
			return err
		})
	})
}
