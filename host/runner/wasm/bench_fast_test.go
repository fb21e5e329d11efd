package wasm_test

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/wasm"
)

const echoPlugin = "../../../plugins/echo"

// benchOutput is what plugins/echo answers to benchInput (its keys
// sorted, one line).
var benchOutput = []byte(`{"message":"hello, world","n":42,"tags":["a","b"]}` + "\n")

// BenchmarkFastPath compares, in one run, a call of the first-party Go
// echo tool (plugins/echo) made every way: raw wazero with a fresh
// instance of the command build, raw wazero calling agenthost_call again
// and again on one reactor instance (reused state: the lower bound), the
// runner's slow path (command build) and its fast path (reactor build,
// fresh state from the snapshot), with and without a pool; then the tiny
// WAT echo on the slow path and the fast path's throughput with 1 and 2
// goroutines. snapshot-B/instance is the memory a pooled instance holds.
func BenchmarkFastPath(b *testing.B) {
	b.Run("go-echo/raw-fresh", func(b *testing.B) { benchRawFresh(b, sdkGuest(b, echoPlugin, modeCommand)) })
	b.Run("go-echo/raw-reused", func(b *testing.B) { benchRawReused(b, sdkGuest(b, echoPlugin, modeReactor)) })
	b.Run("go-echo/slow", func(b *testing.B) { benchRunner(b, sdkGuest(b, echoPlugin, modeCommand), 0, benchOutput) })
	b.Run("go-echo/fast", func(b *testing.B) { benchRunner(b, sdkGuest(b, echoPlugin, modeReactor), 64<<20, benchOutput) })
	b.Run("go-echo/fast-droprestore", func(b *testing.B) {
		benchRunnerWith(b, sdkGuest(b, echoPlugin, modeReactor), 64<<20, benchOutput, wasm.SetDropRestore)
	})
	b.Run("go-echo/fast-copyrestore", func(b *testing.B) {
		benchRunnerWith(b, sdkGuest(b, echoPlugin, modeReactor), 64<<20, benchOutput, wasm.SetCopyRestore)
	})
	b.Run("go-echo/fast-nopool", func(b *testing.B) { benchRunner(b, sdkGuest(b, echoPlugin, modeReactor), 0, benchOutput) })
	b.Run("tiny/raw-fresh", func(b *testing.B) { benchRawFresh(b, watGuest(b, "echo")) })
	b.Run("tiny/slow", func(b *testing.B) { benchRunner(b, watGuest(b, "echo"), 0, benchInput) })
	b.Run("go-echo/pool-memory", benchPoolMemory)
	for _, n := range []int{1, 2} {
		b.Run("go-echo/fast-goroutines-"+string(rune('0'+n)), func(b *testing.B) {
			benchThroughput(b, sdkGuest(b, echoPlugin, modeReactor), n)
		})
	}
}

// benchRunner measures Prepared.Run with a pool budget.
func benchRunner(b *testing.B, module string, budget uint64, want []byte) {
	benchRunnerWith(b, module, budget, want, nil)
}

// benchRunnerWith is benchRunner with set (a restore mode) applied to the
// runner first.
func benchRunnerWith(b *testing.B, module string, budget uint64, want []byte, set func(*wasm.Runner)) {
	r := newPoolRunner(b, budget)
	if set != nil {
		set(r)
	}
	p := prepare(b, r, module, newEnv(b), nil)
	if size := wasm.SnapshotBytes(p); size > 0 {
		b.ReportMetric(float64(size), "snapshot-B/instance")
	}
	ctx := context.Background()
	if _, err := p.Run(ctx, runner.Request{Input: benchInput}); err != nil {
		b.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // let the pool fill
	b.ReportAllocs()
	cpu := cpuTimer()
	for b.Loop() {
		res, err := p.Run(ctx, runner.Request{Input: benchInput})
		if err != nil || res.Err != nil || !bytes.Equal(res.Output, want) {
			b.Fatalf("%v %v %q", err, res.Err, res.Output)
		}
	}
	cpu(b)
	if wasm.Reuses(p) {
		hits, misses, discards := wasm.SlotStats(p)
		total := float64(hits + misses)
		b.ReportMetric(float64(hits)/total, "reused/op")
		b.ReportMetric(float64(discards)/total, "discards/op")
	}
}

// benchThroughput runs b.N calls spread over n goroutines and reports
// calls per second.
func benchThroughput(b *testing.B, module string, n int) {
	r := newPoolRunner(b, 64<<20)
	p := prepare(b, r, module, newEnv(b), nil)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for g := range n {
		calls := b.N / n
		if g < b.N%n {
			calls++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				res, err := p.Run(ctx, runner.Request{Input: benchInput})
				if err != nil || res.Err != nil {
					b.Errorf("%v %v", err, res.Err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}

// benchRawFresh instantiates a command afresh per call with stdin and
// stdout only (no limits, no mounts); any output counts.
func benchRawFresh(b *testing.B, module string) {
	benchRawCheck(b, module, false, func(out []byte) bool { return len(out) > 0 })
}

// rewindReader serves the same input again after each rewind.
type rewindReader struct{ r bytes.Reader }

func (r *rewindReader) Read(p []byte) (int, error) { return r.r.Read(p) }

// benchRawReused starts one reactor instance and calls agenthost_call on
// it per op: no state is reset between calls.
func benchRawReused(b *testing.B, module string) {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	code, err := os.ReadFile(module)
	if err != nil {
		b.Fatal(err)
	}
	in := &rewindReader{}
	var out bytes.Buffer
	m, err := rt.InstantiateWithConfig(ctx, code, wazero.NewModuleConfig().WithName("").WithStartFunctions().WithStdin(in).WithStdout(&out))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close(ctx)
	for _, name := range []string{"_initialize", "agenthost_init"} {
		if _, err := m.ExportedFunction(name).Call(ctx); err != nil {
			b.Fatal(err)
		}
	}
	call := m.ExportedFunction("agenthost_call")
	b.ReportAllocs()
	cpu := cpuTimer()
	for b.Loop() {
		in.r.Reset(benchInput)
		out.Reset()
		res, err := call.Call(ctx)
		if err != nil || api.DecodeI32(res[0]) != 0 || !bytes.Equal(out.Bytes(), benchOutput) {
			b.Fatalf("%v %v %q", err, res, out.Bytes())
		}
	}
	cpu(b)
}

// benchPoolMemory reports the Go heap one pooled instance holds
// (wazero's instance: function table, globals, WASI state) and the
// resident pages of its copy-on-write memory once idle, measured over a
// full pool of the echo tool.
func benchPoolMemory(b *testing.B) {
	module := sdkGuest(b, echoPlugin, modeReactor)
	r := newPoolRunner(b, 64<<20)
	e := newEnv(b)
	// Prepare once without a pool so the compiled module is in memory.
	_ = prepare(b, newPoolRunner(b, 0), module, e, nil)
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		p := prepare(b, r, module, e, nil)
		if !wasm.WaitFull(p) {
			b.Fatal("pool not full")
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		snapshot := wasm.SnapshotBytes(p)
		perInstance := (float64(after.HeapAlloc) - float64(before.HeapAlloc) - float64(snapshot)) / wasm.PoolTarget
		b.ReportMetric(perInstance, "heap-B/instance")
		b.ReportMetric(float64(snapshot), "snapshot-B")
		_ = p.(interface{ Close() error }).Close()
	}
}
