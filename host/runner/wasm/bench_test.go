package wasm_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/agenthost/agenthost/host/internal/cputime"
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
			cpu := cpuTimer()
			for b.Loop() {
				res, err := p.Run(ctx, runner.Request{Input: benchInput})
				if err != nil || res.Err != nil || !bytes.Equal(res.Output, benchInput) {
					b.Fatalf("%v %v %q", err, res.Err, res.Output)
				}
			}
			cpu(b)
		})
		b.Run("raw-"+g.name, func(b *testing.B) { benchRaw(b, g.module(b), false) })
		b.Run("raw-interrupt-"+g.name, func(b *testing.B) { benchRaw(b, g.module(b), true) })
	}
}

// benchRaw instantiates module afresh per call on a bare wazero runtime;
// with interrupt, the runtime closes modules on a done context and each
// call gets a context with a deadline, as the runner's timeout does.
func benchRaw(b *testing.B, module string, interrupt bool) {
	benchRawCheck(b, module, interrupt, func(out []byte) bool { return bytes.Equal(out, benchInput) })
}

// benchRawCheck is benchRaw with the output judged by ok.
func benchRawCheck(b *testing.B, module string, interrupt bool, ok func(out []byte) bool) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(interrupt))
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	code, err := os.ReadFile(module)
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
	cpu := cpuTimer()
	for b.Loop() {
		out.Reset()
		callCtx, cancel := ctx, context.CancelFunc(func() {})
		if interrupt {
			callCtx, cancel = context.WithTimeout(ctx, time.Minute)
		}
		m, err := rt.InstantiateModule(callCtx, mod, cfg.WithStdin(bytes.NewReader(benchInput)).WithStdout(&out))
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		_ = m.Close(ctx)
		if !ok(out.Bytes()) {
			b.Fatalf("unexpected output %q", out.Bytes())
		}
	}
	cpu(b)
}

// cpuTimer reports the process CPU time (user + system) per op as
// "cpu-ns/op" when the returned func is called: unlike ns/op it does not
// count time spent waiting for a core on a loaded machine.
func cpuTimer() func(*testing.B) {
	start := int64(cputime.Process())
	return func(b *testing.B) {
		b.ReportMetric(float64(int64(cputime.Process())-start)/float64(b.N), "cpu-ns/op")
	}
}
