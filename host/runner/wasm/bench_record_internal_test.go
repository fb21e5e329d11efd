package wasm

import (
	"testing"

	"github.com/agenthost/agenthost/host/runner"
)

// BenchmarkRecorderCall is the recording's own work in one call, apart
// from the call: a recorder, readings clock readings (with a seed and 8
// random bytes when there are any) and the call's record. The fast path's
// echo call reads neither clock nor random (its runtime was started
// before the snapshot); a command's from _start reads the clock 6 to 8
// times and 32 random bytes.
func BenchmarkRecorderCall(b *testing.B) {
	p := &prepared{}
	startup := &runner.Inputs{Seed: make([]byte, 32), Clock: make([]int64, 39)}
	var buf [32]byte
	for _, reads := range []int{0, 8} {
		b.Run("readings-"+string(rune('0'+reads)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := newRecorder()
				for range reads {
					r.nanotime()
				}
				if reads > 0 {
					_, _ = r.Read(buf[:])
				}
				if rec := p.recorded(r, startup, ""); rec == nil {
					b.Fatal("no record")
				}
			}
		})
	}
}
