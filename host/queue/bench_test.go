package queue_test

import (
	"context"
	"encoding/json"
	"testing"

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
	b.Run("local", func(b *testing.B) {
		hosttest.Load(b, 16, func() error { local.Call(ctx, "core:echo", args); return nil })
	})
	b.Run("nats", func(b *testing.B) {
		hosttest.Load(b, 16, func() error {
			_, err := d.Call(ctx, "acme", "core:echo", args)
			return err
		})
	})
}
