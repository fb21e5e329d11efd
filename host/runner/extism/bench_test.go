package extism_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	extismsdk "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/extism"
)

// benchInput is the JSON echo workload of SPEC §9.
var benchInput = []byte(`{"message":"hello","meta":{"k":null},"n":3,"ok":true,"tags":["a","b"]}`)

// benchCache shares compiled code between the benchmarks' runtimes.
func benchCache(b *testing.B) wazero.CompilationCache {
	b.Helper()
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

// BenchmarkEcho compares, for the same Go JSON echo:
//   - raw wazero with a reused instance (the SPEC §9 reference path);
//   - this runner's Extism ABI on a reused instance (ABI cost per call);
//   - go-sdk v1.7.1 with a reused plugin;
//   - this runner's Run (a fresh instance per call, as the product runs);
//   - go-sdk with a fresh instance per call;
//   - a wasi-command on raw wazero, fresh instance per call.
func BenchmarkEcho(b *testing.B) {
	ctx := context.Background()
	cache := benchCache(b)

	b.Run("raw-wazero-reused", func(b *testing.B) {
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache))
		defer rt.Close(ctx)
		wasi_snapshot_preview1.MustInstantiate(ctx, rt)
		mod, err := rt.InstantiateWithConfig(ctx, readGuest(b, "rawecho"), wazero.NewModuleConfig().WithStartFunctions("_initialize"))
		if err != nil {
			b.Fatal(err)
		}
		malloc, echo, free := mod.ExportedFunction("malloc"), mod.ExportedFunction("echo"), mod.ExportedFunction("free")
		mem := mod.Memory()
		call := func() []byte {
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
		checkEcho(b, call())
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			call()
		}
	})

	r, err := extism.New(ctx, extism.Options{CacheDir: cacheDir})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close(ctx)
	tool := toolFor(guests["echo"], "call")
	p, err := r.Prepare(ctx, tool, grantFor(tool))
	if err != nil {
		b.Fatal(err)
	}

	b.Run("agenthost-extism-reused", func(b *testing.B) {
		call, closeFn, err := extism.Reused(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		defer closeFn()
		out, aerr := call(benchInput)
		if aerr != nil {
			b.Fatal(aerr)
		}
		checkEcho(b, out)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			call(benchInput)
		}
	})

	sdkPlugin := func(b *testing.B) *extismsdk.CompiledPlugin {
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

	b.Run("go-sdk-reused", func(b *testing.B) {
		c := sdkPlugin(b)
		inst, err := c.Instance(ctx, extismsdk.PluginInstanceConfig{})
		if err != nil {
			b.Fatal(err)
		}
		defer inst.Close(ctx)
		_, out, err := inst.Call("call", benchInput)
		if err != nil {
			b.Fatal(err)
		}
		checkEcho(b, out)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			inst.Call("call", benchInput)
		}
	})

	b.Run("agenthost-extism-run-fresh", func(b *testing.B) {
		res, err := p.Run(ctx, runner.Request{Input: benchInput})
		if err != nil || res.Err != nil {
			b.Fatal(err, res.Err)
		}
		checkEcho(b, res.Output)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p.Run(ctx, runner.Request{Input: benchInput})
		}
	})

	b.Run("go-sdk-fresh", func(b *testing.B) {
		c := sdkPlugin(b)
		once := func() []byte {
			inst, err := c.Instance(ctx, extismsdk.PluginInstanceConfig{})
			if err != nil {
				b.Fatal(err)
			}
			defer inst.Close(ctx)
			_, out, err := inst.Call("call", benchInput)
			if err != nil {
				b.Fatal(err)
			}
			return out
		}
		checkEcho(b, once())
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			once()
		}
	})

	b.Run("wasi-command-fresh", func(b *testing.B) {
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache).WithCloseOnContextDone(true))
		defer rt.Close(ctx)
		wasi_snapshot_preview1.MustInstantiate(ctx, rt)
		compiled, err := rt.CompileModule(ctx, readGuest(b, "wasiecho"))
		if err != nil {
			b.Fatal(err)
		}
		once := func() []byte {
			var out bytes.Buffer
			mod, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("").
				WithStdin(bytes.NewReader(benchInput)).WithStdout(&out))
			if err != nil {
				b.Fatal(err)
			}
			mod.Close(ctx)
			return out.Bytes()
		}
		checkEcho(b, once())
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			once()
		}
	})
}
