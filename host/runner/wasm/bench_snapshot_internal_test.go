package wasm

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/agenthost/agenthost/host/internal/meter"
)

// BenchmarkGuestAfterRestore isolates the guest's own time per call on a
// bare runtime: one reactor instance of AGENTHOST_BENCH_REACTOR, with its
// memory and globals restored from a snapshot before each call (restored)
// or left as the previous call left them (reused). AGENTHOST_BENCH_INPUT
// replaces the default arguments (an echo message).
func BenchmarkGuestAfterRestore(b *testing.B) {
	path := os.Getenv("AGENTHOST_BENCH_REACTOR")
	if path == "" {
		b.Skip("AGENTHOST_BENCH_REACTOR not set")
	}
	code, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	plain, err := rewriteReactor(code)
	if err != nil {
		b.Fatal(err)
	}
	instrumented, err := meter.Instrument(code)
	if err != nil {
		b.Fatal(err)
	}
	metered, err := rewriteReactor(instrumented)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		rm       *reactorModule
		restore  bool
		sysClock bool
		mounts   bool
		diff     bool // restore only the bytes that differ (restoreDirty)
		flush    bool // reused, but with the CPU caches flushed before each call
		// reused, but with this many bytes of other memory read before
		// each call (what a restore's compare of about 60 pages reads)
		pollute int
	}{
		{name: "reused-original", rm: &reactorModule{code: code}},
		{name: "reused-metered", rm: metered},
		{name: "reused", rm: plain},
		{name: "restored", rm: plain, restore: true},
		{name: "restored-metered", rm: metered, restore: true},
		{name: "restored-diff", rm: plain, restore: true, diff: true},
		{name: "restored-metered-diff", rm: metered, restore: true, diff: true},
		{name: "reused-flushed", rm: plain, flush: true},
		{name: "reused-read256k", rm: plain, pollute: 256 << 10},
		{name: "reused-sysclock", rm: plain, sysClock: true},
		{name: "restored-sysclock", rm: plain, restore: true, sysClock: true},
		{name: "restored-metered-mounts", rm: metered, restore: true, sysClock: true, mounts: true},
	} {
		rm, restore, sysClock, mounts, diff, flush, pollute := tc.rm, tc.restore, tc.sysClock, tc.mounts, tc.diff, tc.flush, tc.pollute
		b.Run(tc.name, func(b *testing.B) {
			ctx := meter.WithBudget(context.Background(), &meter.Budget{})
			rt := wazero.NewRuntime(ctx)
			defer rt.Close(ctx)
			wasi_snapshot_preview1.MustInstantiate(ctx, rt)
			if err := meter.NewHostModule(ctx, rt); err != nil {
				b.Fatal(err)
			}
			in := &bytes.Reader{}
			var out bytes.Buffer
			var mem experimental.MemoryAllocator = &snapshotAllocator{cap: &memoryCap{limit: 1 << 30}, pool: prefixSource{prefix: rm.initial, size: rm.initialSize}}
			if rm.initialSize == 0 {
				mem = &memoryCap{limit: 1 << 30}
			}
			cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions().WithStdin(in).WithStdout(&out)
			if sysClock {
				cfg = cfg.WithSysNanotime().WithSysWalltime()
			}
			if mounts {
				fsc := wazero.NewFSConfig()
				for _, g := range []string{"/", "/workspace", "/tool", "/cache", "/tmp"} {
					fsc = fsc.WithDirMount(b.TempDir(), g)
				}
				cfg = cfg.WithFSConfig(fsc)
			}
			m, err := rt.InstantiateWithConfig(experimentalAlloc(ctx, mem), rm.code, cfg)
			if err != nil {
				b.Fatal(err)
			}
			for _, fn := range []string{exportInitialize, exportInit, exportWarm} {
				if m.ExportedFunction(fn) == nil && fn == exportWarm {
					continue
				}
				if _, err := m.ExportedFunction(fn).Call(ctx); err != nil {
					b.Fatal(err)
				}
			}
			snap, _ := m.Memory().Read(0, m.Memory().Size())
			snap = append([]byte(nil), snap...)
			var globals []api.MutableGlobal
			var values []uint64
			for _, name := range rm.globals {
				g := m.ExportedGlobal(name).(api.MutableGlobal)
				globals, values = append(globals, g), append(values, g.Get())
			}
			call := m.ExportedFunction(exportCall)
			input := []byte(`{"message":"hello, world","n":42,"tags":["a","b"]}`)
			if s := os.Getenv("AGENTHOST_BENCH_INPUT"); s != "" {
				input = []byte(s)
			}
			flushBuf := make([]byte, 16<<20)
			b.ResetTimer()
			for b.Loop() {
				if flush {
					b.StopTimer()
					for i := range flushBuf {
						flushBuf[i]++
					}
					b.StartTimer()
				}
				if pollute > 0 {
					b.StopTimer()
					var sum byte
					for i := 0; i < pollute; i += 64 {
						sum += flushBuf[i]
					}
					flushBuf[0] = sum
					b.StartTimer()
				}
				if restore {
					b.StopTimer()
					if diff {
						mem, _ := m.Memory().Read(0, m.Memory().Size())
						restoreDirty(mem, snap, everyPage)
					} else {
						m.Memory().Write(0, snap)
					}
					for i, g := range globals {
						g.Set(values[i])
					}
					b.StartTimer()
				}
				in.Reset(input)
				out.Reset()
				if _, err := call.Call(meter.WithBudget(ctx, &meter.Budget{})); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func experimentalAlloc(ctx context.Context, a experimental.MemoryAllocator) context.Context {
	return experimental.WithMemoryAllocator(ctx, a)
}
