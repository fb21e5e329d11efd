package host_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/runner/wasm"
)

// BenchmarkWarmMemory warms the first-party core, text, data and fs
// tools of a new host over an empty cache (each compiled for the
// interpreter, then by the compiler) and reports the Go heap in use
// afterwards, tiering on and off (AGENTHOST_WASM_TIERING): what a
// server that warmed its catalogue keeps.
func BenchmarkWarmMemory(b *testing.B) {
	ctx := context.Background()
	tp := hosttest.Toolpacks(b)
	dirs := []string{filepath.Join(tp, "core"), filepath.Join(tp, "text"), filepath.Join(tp, "data"), filepath.Join(tp, "fs")}
	for _, tier := range []string{"on", "off"} {
		b.Run("tiering-"+tier, func(b *testing.B) {
			b.Setenv(wasm.EnvTiering, tier)
			var heap []float64
			for b.Loop() {
				h, err := host.New(ctx, host.Options{Dirs: dirs, CacheDir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				if rep := h.Warm(ctx, host.WarmOptions{}); len(rep.Failed) > 0 || len(rep.Ready) == 0 {
					b.Fatalf("warm: %+v", rep)
				}
				runtime.GC()
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				heap = append(heap, float64(m.HeapInuse)/(1<<20))
				_ = h.Close(ctx)
			}
			b.ReportMetric(median(heap), "heap-MiB")
		})
	}
}
