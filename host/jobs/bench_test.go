package jobs_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/jobs"
)

// BenchmarkCall is a synchronous call of core:echo through the engine
// (the tenant's limit, a root budget sharing the tenant's places, the
// call's tracking for shutdown) against the same call straight on the
// host, paired in the same run: the engine's own cost per call.
func BenchmarkCall(b *testing.B) {
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{Dirs: []string{filepath.Join(hosttest.Toolpacks(b), "core")}, CacheDir: hosttest.CacheDir(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(ctx)
	h.Warm(ctx, host.WarmOptions{})
	st := openStore(b, filepath.Join(b.TempDir(), "db"))
	e, err := jobs.New(ctx, jobs.Options{Store: st, Run: func(ctx context.Context, _, tool string, args json.RawMessage) (abi.Envelope, error) {
		return h.Call(ctx, tool, args), nil
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	args := json.RawMessage(`{"a":1}`)
	// Paired: each iteration makes one call of each, in turn, and the
	// medians of their times are compared, so that other work on the
	// machine weighs on both alike.
	var direct, through []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if env := h.Call(ctx, "core:echo", args); env.Error != nil {
			b.Fatal(env.Error)
		}
		t1 := time.Now()
		if env, err := e.Call(ctx, "acme", "core:echo", args); err != nil || env.Error != nil {
			b.Fatal(err, env.Error)
		}
		direct, through = append(direct, t1.Sub(t0)), append(through, time.Since(t1))
	}
	median := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	h50, e50 := median(direct), median(through)
	b.ReportMetric(float64(h50.Nanoseconds())/1e3, "host-µs")
	b.ReportMetric(float64(e50.Nanoseconds())/1e3, "engine-µs")
	b.ReportMetric(float64(e50-h50)/1e3, "added-µs")
	b.ReportMetric(float64(e50)/float64(h50), "engine/host")
}
