package wasm_test

import (
	"testing"

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
