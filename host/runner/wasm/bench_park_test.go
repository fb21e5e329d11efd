package wasm_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/agenthost/agenthost/host/runner"
)

// BenchmarkCommand is one call of a plain Go command (built without the
// guest SDK): parked (a pooled instance resumed at its first read of
// stdin), plain (the same tool started from _start per call, as without
// a pool budget) and raw wazero instantiating the same module afresh,
// the reference. goecho copies stdin; goprobe decodes its JSON
// arguments, reads the clock and encodes a JSON answer.
func BenchmarkCommand(b *testing.B) {
	for _, g := range []struct {
		name  string
		input []byte
	}{
		{"goecho", benchInput},
		{"goprobe", []byte(`{"ops":[{"op":"now"},{"op":"args"}]}`)},
	} {
		for _, mode := range []struct {
			name   string
			budget uint64
		}{{"parked", 64 << 20}, {"plain", 0}} {
			b.Run(g.name+"/"+mode.name, func(b *testing.B) {
				e := newEnv(b)
				r := newPoolRunner(b, mode.budget)
				p := prepare(b, r, goGuest(b, g.name), e, nil)
				ctx := context.Background()
				b.ReportAllocs()
				cpu := cpuTimer()
				for b.Loop() {
					res, err := p.Run(ctx, runner.Request{Input: g.input})
					if err != nil || res.Err != nil || len(res.Output) == 0 {
						b.Fatalf("%v %v %q", err, res.Err, res.Output)
					}
				}
				cpu(b)
			})
		}
		b.Run(g.name+"/raw-fresh", func(b *testing.B) {
			benchRawCheck(b, goGuest(b, g.name), false, func(out []byte) bool { return len(out) > 0 && !bytes.Contains(out, []byte(`"error"`)) })
		})
	}
}
