package natsexec_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/internal/cputime"
	"github.com/agenthost/agenthost/host/jobs/natsexec"
	"github.com/agenthost/agenthost/host/jobs/natsexec/queuetest"
)

// BenchmarkQueue is core:echo from 16 concurrent callers, through the
// NATS work queue to two workers (embedded nats-server, all on this
// machine), against the same calls on an in-process host in the same
// run: calls per second and p99. Every call and result is signed and
// encrypted; nats is a loopback connection in plain text (nkeys), the
// same over TLS is nats-tls.
func BenchmarkQueue(b *testing.B) {
	ctx := context.Background()
	key := queuetest.Key(b)
	o := natsexec.Options{Key: key, Concurrency: 8}
	dispatcher := func(ns *queuetest.Server) *natsexec.Dispatcher {
		d, err := natsexec.NewDispatcher(ctx, ns.Connect(b, "serve"), o)
		if err != nil {
			b.Fatal(err)
		}
		for i := range 2 {
			startWorkerB(b, ns, []string{"A", "B"}[i], o)
		}
		return d
	}
	d := dispatcher(queuetest.StartWith(b, true))
	local, err := host.New(ctx, host.Options{Dirs: []string{hosttest.Toolpacks(b)}, CacheDir: hosttest.CacheDir(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close(ctx)
	args := json.RawMessage(`{"a":1}`)
	// load is hosttest.Load with the process's CPU time per call (the
	// nats-server, the workers and the callers all run in it): steadier
	// than calls/s when other work shares the machine.
	load := func(b *testing.B, call func() error) {
		c0 := cputime.Process()
		hosttest.Load(b, 16, call)
		if c := cputime.Process() - c0; c > 0 {
			b.ReportMetric(float64(c.Microseconds())/float64(max(b.N/16, 1)*16), "cpu-µs/call")
		}
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
	dtls := dispatcher(queuetest.Start(b))
	b.Run("nats-tls", func(b *testing.B) {
		load(b, func() error {
			_, err := dtls.Call(ctx, "acme", "core:echo", args)
			return err
		})
	})
}
