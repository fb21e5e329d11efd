package meter_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/internal/meter"
	"github.com/tetratelabs/wazero"
)

// FuzzInstrument feeds the pass arbitrary bytes, seeded with the WAT
// fixtures and generated programs. Properties: it never panics, it is
// deterministic, its output is never accepted again (the meter's
// namespace is reserved), and whenever wazero accepts the input it
// accepts the output.
func FuzzInstrument(f *testing.F) {
	paths, err := filepath.Glob("testdata/wat/*.wasm")
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		f.Add(readFile(f, p))
	}
	for seed := uint64(0); seed < 8; seed++ {
		g := &progGen{rng: rand.New(rand.NewPCG(seed, 2))}
		f.Add(g.program())
	}
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	f.Cleanup(func() { _ = r.Close(ctx) })
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, err := meter.Instrument(wasm)
		if err != nil {
			if out != nil {
				t.Fatal("output with an error")
			}
			return
		}
		again, err := meter.Instrument(wasm)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not deterministic: %v", err)
		}
		if _, err := meter.Instrument(out); err == nil || !strings.Contains(err.Error(), "reserved") {
			t.Fatalf("instrumented output accepted again: %v", err)
		}
		if c, err := r.CompileModule(ctx, wasm); err == nil {
			_ = c.Close(ctx)
			c2, err := r.CompileModule(ctx, out)
			if err != nil {
				t.Fatalf("wazero accepts the input but not the output: %v", err)
			}
			_ = c2.Close(ctx)
		}
	})
}
