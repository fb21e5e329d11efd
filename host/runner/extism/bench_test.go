package extism_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	extismsdk "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/agenthost/agenthost/host/internal/meter"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/extism"
)

// benchInput is the JSON echo workload of the performance targets.
var benchInput = []byte(`{"message":"hello","meta":{"k":null},"n":3,"ok":true,"tags":["a","b"]}`)

// benchCache shares compiled code between the benchmarks' runtimes.
func benchCache(b *testing.B) wazero.CompilationCache {
	b.Helper()
	if err := buildGuests(benchGuests); err != nil {
		b.Fatal(err)
	}
	c, err := wazero.NewCompilationCacheWithDir(cacheDir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func readGuest(b *testing.B, name string) []byte {
	b.Helper()
	code, err := os.ReadFile(guests[name])
	if err != nil {
		b.Fatal(err)
	}
	return code
}

func checkEcho(b *testing.B, out []byte) {
	if !bytes.Equal(out, benchInput) {
		b.Fatalf("echo returned %q", out)
	}
}

// pairedCalls runs each call in turn, b.N rounds, and reports the median
// of each as "<name>-µs" and the ratio of each median to the first as
// "<name>/<first>". Interleaving keeps the ratios meaningful on a shared,
// noisy machine, where sequential sub-benchmarks see different loads.
func pairedCalls(b *testing.B, names []string, calls []func()) {
	b.Helper()
	times := make([][]time.Duration, len(calls))
	for _, c := range calls {
		c() // warm up
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, c := range calls {
			start := time.Now()
			c()
			times[j] = append(times[j], time.Since(start))
		}
	}
	b.StopTimer()
	medians := make([]float64, len(calls))
	for j, ts := range times {
		sort.Slice(ts, func(a, c int) bool { return ts[a] < ts[c] })
		medians[j] = float64(ts[len(ts)/2].Nanoseconds()) / 1e3
		b.ReportMetric(medians[j], names[j]+"-µs")
	}
	for j := 1; j < len(calls); j++ {
		b.ReportMetric(medians[j]/medians[0], names[j]+"/"+names[0])
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkEchoPaired measures the same paths as BenchmarkEcho
// interleaved, and reports medians and ratios: "reused" compares the ABI
// cost per call on one instance, "fresh" the cost of a call in a new instance.
func BenchmarkEchoPaired(b *testing.B) {
	ctx := context.Background()
	cache := benchCache(b)
	raw := rawReused(b, ctx, cache, false)
	rawMetered := rawReused(b, ctx, cache, true)
	p := echoPrepared(b, ctx)
	ours, closeOurs, err := extism.Reused(ctx, p)
	if err != nil {
		b.Fatal(err)
	}
	defer closeOurs()
	c := sdkCompiled(b, ctx, cache)
	sdk, err := c.Instance(ctx, extismsdk.PluginInstanceConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer sdk.Close(ctx)
	b.Run("reused", func(b *testing.B) {
		pairedCalls(b, []string{"raw", "rawmetered", "extism", "gosdk"}, []func(){
			func() { checkEcho(b, raw()) },
			func() { checkEcho(b, rawMetered()) },
			func() {
				out, aerr := ours(benchInput)
				if aerr != nil {
					b.Fatal(aerr)
				}
				checkEcho(b, out)
			},
			func() {
				_, out, err := sdk.Call("call", benchInput)
				if err != nil {
					b.Fatal(err)
				}
				checkEcho(b, out)
			},
		})
	})
	wasi := wasiFresh(b, ctx, cache)
	b.Run("fresh", func(b *testing.B) {
		pairedCalls(b, []string{"wasi", "extism", "gosdk"}, []func(){
			func() { checkEcho(b, wasi()) },
			func() {
				res, err := p.Run(ctx, runner.Request{Input: benchInput})
				if err != nil || res.Err != nil {
					b.Fatal(err, res.Err)
				}
				checkEcho(b, res.Output)
			},
			func() { checkEcho(b, sdkFresh(b, ctx, c, "call", benchInput)) },
		})
	})
}

// rawReused returns a call of the raw-wazero echo on one instance; with
// metered, the module is instrumented by host/internal/meter as the
// runners' modules are, to separate the meter's cost from the ABI's.
func rawReused(b *testing.B, ctx context.Context, cache wazero.CompilationCache, metered bool) func() []byte {
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache))
	b.Cleanup(func() { rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	code := readGuest(b, "rawecho")
	if metered {
		var err error
		if code, err = meter.Instrument(code); err != nil {
			b.Fatal(err)
		}
		if err := meter.NewHostModule(ctx, rt); err != nil {
			b.Fatal(err)
		}
		ctx = meter.WithBudget(ctx, &meter.Budget{})
	}
	mod, err := rt.InstantiateWithConfig(ctx, code, wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	if err != nil {
		b.Fatal(err)
	}
	malloc, echo, free := mod.ExportedFunction("malloc"), mod.ExportedFunction("echo"), mod.ExportedFunction("free")
	mem := mod.Memory()
	return func() []byte {
		r, err := malloc.Call(ctx, uint64(len(benchInput)))
		if err != nil {
			b.Fatal(err)
		}
		p := uint32(r[0])
		mem.Write(p, benchInput)
		r, err = echo.Call(ctx, uint64(p), uint64(len(benchInput)))
		if err != nil {
			b.Fatal(err)
		}
		q, n := uint32(r[0]>>32), uint32(r[0])
		view, _ := mem.Read(q, n)
		out := append([]byte(nil), view...)
		free.Call(ctx, uint64(p))
		free.Call(ctx, uint64(q))
		return out
	}
}

// echoPrepared prepares the PDK echo on a new runner.
func echoPrepared(b *testing.B, ctx context.Context) runner.Prepared {
	r, err := extism.New(ctx, extism.Options{CacheDir: cacheDir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close(ctx) })
	tool := toolFor(guests["echo"], "call")
	p, err := r.Prepare(ctx, tool, grantFor(tool))
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// sdkCompiled compiles the PDK echo with go-sdk's defaults.
func sdkCompiled(b *testing.B, ctx context.Context, cache wazero.CompilationCache) *extismsdk.CompiledPlugin {
	manifest := extismsdk.Manifest{Wasm: []extismsdk.Wasm{extismsdk.WasmData{Data: readGuest(b, "echo")}}}
	c, err := extismsdk.NewCompiledPlugin(ctx, manifest, extismsdk.PluginConfig{
		EnableWasi:    true,
		RuntimeConfig: wazero.NewRuntimeConfig().WithCompilationCache(cache),
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close(ctx) })
	return c
}

// sdkFresh calls fn with input in a new go-sdk instance of c.
func sdkFresh(b *testing.B, ctx context.Context, c *extismsdk.CompiledPlugin, fn string, input []byte) []byte {
	inst, err := c.Instance(ctx, extismsdk.PluginInstanceConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer inst.Close(ctx)
	_, out, err := inst.Call(fn, input)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// wasiFresh returns a call of the wasi-command echo in a new instance.
func wasiFresh(b *testing.B, ctx context.Context, cache wazero.CompilationCache) func() []byte {
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache).WithCloseOnContextDone(true))
	b.Cleanup(func() { rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	compiled, err := rt.CompileModule(ctx, readGuest(b, "wasiecho"))
	if err != nil {
		b.Fatal(err)
	}
	return func() []byte {
		var out bytes.Buffer
		mod, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("").
			WithStdin(bytes.NewReader(benchInput)).WithStdout(&out))
		if err != nil {
			b.Fatal(err)
		}
		mod.Close(ctx)
		return out.Bytes()
	}
}

// BenchmarkEcho measures, one after the other, for the same Go JSON echo:
//   - raw wazero with a reused instance (the reference path);
//   - this runner's Extism ABI on a reused instance (ABI cost per call);
//   - go-sdk v1.7.1 with a reused plugin;
//   - this runner's Run (a fresh instance per call, as the product runs);
//   - go-sdk with a fresh instance per call;
//   - a wasi-command on raw wazero, fresh instance per call.
//
// On a shared machine prefer BenchmarkEchoPaired's ratios.
func BenchmarkEcho(b *testing.B) {
	ctx := context.Background()
	cache := benchCache(b)
	loop := func(b *testing.B, call func()) {
		call()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			call()
		}
	}
	b.Run("raw-wazero-reused", func(b *testing.B) {
		raw := rawReused(b, ctx, cache, false)
		loop(b, func() { checkEcho(b, raw()) })
	})
	p := echoPrepared(b, ctx)
	b.Run("agenthost-extism-reused", func(b *testing.B) {
		call, closeFn, err := extism.Reused(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		defer closeFn()
		loop(b, func() {
			out, aerr := call(benchInput)
			if aerr != nil {
				b.Fatal(aerr)
			}
			checkEcho(b, out)
		})
	})
	b.Run("go-sdk-reused", func(b *testing.B) {
		inst, err := sdkCompiled(b, ctx, cache).Instance(ctx, extismsdk.PluginInstanceConfig{})
		if err != nil {
			b.Fatal(err)
		}
		defer inst.Close(ctx)
		loop(b, func() {
			_, out, err := inst.Call("call", benchInput)
			if err != nil {
				b.Fatal(err)
			}
			checkEcho(b, out)
		})
	})
	b.Run("agenthost-extism-run-fresh", func(b *testing.B) {
		loop(b, func() {
			res, err := p.Run(ctx, runner.Request{Input: benchInput})
			if err != nil || res.Err != nil {
				b.Fatal(err, res.Err)
			}
			checkEcho(b, res.Output)
		})
	})
	b.Run("go-sdk-fresh", func(b *testing.B) {
		c := sdkCompiled(b, ctx, cache)
		loop(b, func() {
			inst, err := c.Instance(ctx, extismsdk.PluginInstanceConfig{})
			if err != nil {
				b.Fatal(err)
			}
			_, out, err := inst.Call("call", benchInput)
			inst.Close(ctx)
			if err != nil {
				b.Fatal(err)
			}
			checkEcho(b, out)
		})
	})
	b.Run("wasi-command-fresh", func(b *testing.B) {
		wasi := wasiFresh(b, ctx, cache)
		loop(b, func() { checkEcho(b, wasi()) })
	})
}

// BenchmarkFreshPhases splits a fresh instance of the Go echo into
// wazero's instantiation (memory, data segments) and the Go runtime's
// _initialize, the two costs a pre-initialised snapshot would remove.
func BenchmarkFreshPhases(b *testing.B) {
	ctx := context.Background()
	p := echoPrepared(b, ctx)
	var inst, init []time.Duration
	for i := 0; i < b.N; i++ {
		a, c, err := extism.FreshPhases(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		inst, init = append(inst, a), append(init, c)
	}
	median := func(ts []time.Duration) float64 {
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		return float64(ts[len(ts)/2].Nanoseconds()) / 1e3
	}
	b.ReportMetric(median(inst), "instantiate-µs")
	b.ReportMetric(median(init), "initialize-µs")
}

// BenchmarkThirdParty runs the third-party count_vowels plugin (Rust, no
// initialiser: each call is a fresh instance) through this runner, with
// memory growing by a quarter (the policy) and by doubling (the former
// one), against go-sdk v1.7.1 with a fresh instance per call, interleaved.
func BenchmarkThirdParty(b *testing.B) {
	ctx := context.Background()
	cache := benchCache(b)
	path, err := filepath.Abs(filepath.Join(thirdParty, "count_vowels.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	code, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	r, err := extism.New(ctx, extism.Options{CacheDir: cacheDir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close(ctx) })
	tool := toolFor(path, "count_vowels")
	p, err := r.Prepare(ctx, tool, grantFor(tool))
	if err != nil {
		b.Fatal(err)
	}
	c, err := extismsdk.NewCompiledPlugin(ctx, extismsdk.Manifest{Wasm: []extismsdk.Wasm{extismsdk.WasmData{Data: code}}},
		extismsdk.PluginConfig{EnableWasi: true, RuntimeConfig: wazero.NewRuntimeConfig().WithCompilationCache(cache)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close(ctx) })
	input := []byte("the quick brown fox jumps over the lazy dog")
	want := `{"count":11,"total":11,"vowels":"aeiouAEIOU"}`
	ours := func() {
		res, err := p.Run(ctx, runner.Request{Input: input})
		if err != nil || res.Err != nil || string(res.Output) != want {
			b.Fatalf("%q %v %v", res.Output, err, res.Err)
		}
	}
	pairedCalls(b, []string{"gosdk", "extism", "extism-doubling"}, []func(){
		func() {
			if out := sdkFresh(b, ctx, c, "count_vowels", input); string(out) != want {
				b.Fatalf("go-sdk returned %q", out)
			}
		},
		ours,
		func() {
			defer extism.SetDoublingGrowth(true)()
			ours()
		},
	})
}
