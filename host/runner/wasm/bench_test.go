package wasm_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/agenthost/agenthost/host/runner"
)

var benchInput = []byte(`{"message":"hello, world","n":42,"tags":["a","b"]}`)

// BenchmarkEcho compares one call of an echo tool through the runner
// (fresh instance, mounts, limits, log and output capture) with raw
// wazero instantiating the same module with stdin/stdout only.
func BenchmarkEcho(b *testing.B) {
	for _, g := range []struct {
		name   string
		module func(testing.TB) string
	}{
		{"wat", func(t testing.TB) string { return watGuest(t, "echo") }},
		{"go", func(t testing.TB) string { return goGuest(t, "goecho") }},
	} {
		b.Run("runner-"+g.name, func(b *testing.B) {
			r := newRunner(b)
			p := prepare(b, r, g.module(b), newEnv(b), nil)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := p.Run(ctx, runner.Request{Input: benchInput})
				if err != nil || res.Err != nil || !bytes.Equal(res.Output, benchInput) {
					b.Fatalf("%v %v %q", err, res.Err, res.Output)
				}
			}
		})
		b.Run("raw-"+g.name, func(b *testing.B) {
			ctx := context.Background()
			rt := wazero.NewRuntime(ctx)
			defer rt.Close(ctx)
			wasi_snapshot_preview1.MustInstantiate(ctx, rt)
			code, err := os.ReadFile(g.module(b))
			if err != nil {
				b.Fatal(err)
			}
			mod, err := rt.CompileModule(ctx, code)
			if err != nil {
				b.Fatal(err)
			}
			cfg := wazero.NewModuleConfig().WithName("")
			var out bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				out.Reset()
				m, err := rt.InstantiateModule(ctx, mod, cfg.WithStdin(bytes.NewReader(benchInput)).WithStdout(&out))
				if err != nil {
					b.Fatal(err)
				}
				_ = m.Close(ctx)
				if !bytes.Equal(out.Bytes(), benchInput) {
					b.Fatalf("%q", out.Bytes())
				}
			}
		})
	}
}
