package wasm_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/wasm"
)

// BenchmarkRecord measures, in one run, a call of the first-party Go echo
// tool (plugins/echo) with its clocks and random bytes recorded and
// without, every way a call can run: a pooled reactor instance, a fresh
// one from the snapshot, a parked command and a command from _start.
func BenchmarkRecord(b *testing.B) {
	ways := []struct {
		name   string
		mode   string
		budget uint64
	}{
		{"fast", modeReactor, 64 << 20},
		{"fast-nopool", modeReactor, 0},
		{"parked", modeCommand, 64 << 20},
		{"slow", modeCommand, 0},
	}
	for _, w := range ways {
		for _, on := range []bool{false, true} {
			name := w.name + "/off"
			if on {
				name = w.name + "/on"
			}
			b.Run(name, func(b *testing.B) {
				wasm.SetRecording(on)
				defer wasm.SetRecording(true)
				benchRunner(b, sdkGuest(b, echoPlugin, w.mode), w.budget, benchOutput)
			})
		}
	}
}

// BenchmarkRecordPaired times a call with recording on against one with
// it off, alternately in one loop, so a loaded machine slows both alike:
// on/off is the ratio of their total times, on-ns and off-ns their
// means per call.
func BenchmarkRecordPaired(b *testing.B) {
	for _, w := range []struct {
		name   string
		mode   string
		budget uint64
	}{
		{"fast", modeReactor, 64 << 20},
		{"fast-nopool", modeReactor, 0},
		{"parked", modeCommand, 64 << 20},
		{"slow", modeCommand, 0},
	} {
		b.Run(w.name, func(b *testing.B) {
			defer wasm.SetRecording(true)
			p := prepare(b, newPoolRunner(b, w.budget), sdkGuest(b, echoPlugin, w.mode), newEnv(b), nil)
			ctx := context.Background()
			call := func() time.Duration {
				start := time.Now()
				res, err := p.Run(ctx, runner.Request{Input: benchInput})
				d := time.Since(start)
				if err != nil || res.Err != nil || !bytes.Equal(res.Output, benchOutput) {
					b.Fatalf("%v %v %q", err, res.Err, res.Output)
				}
				return d
			}
			call()
			time.Sleep(10 * time.Millisecond) // let the pool fill
			var on, off time.Duration
			n := 0
			for b.Loop() {
				// Alternate which goes first, so neither always follows
				// the other's restore.
				first := n%2 == 0
				wasm.SetRecording(first)
				d1 := call()
				wasm.SetRecording(!first)
				d2 := call()
				if first {
					on, off = on+d1, off+d2
				} else {
					on, off = on+d2, off+d1
				}
				n++
			}
			b.ReportMetric(float64(on)/float64(off), "on/off")
			b.ReportMetric(float64(on)/float64(n), "on-ns")
			b.ReportMetric(float64(off)/float64(n), "off-ns")
		})
	}
}
