package meter

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
)

// Nanosleep returns a sys.Nanosleep for a call's module config that
// sleeps for real but returns as soon as ctx is done. Blocking WASI calls
// (poll_oneoff with a clock, hence every guest sleep) then end at the
// deadline; the guest's next refill, at most one slice later, traps with
// TIMEOUT. Without it wazero's default sleep returns at once and
// WithSysNanosleep ignores the context.
func Nanosleep(ctx context.Context) sys.Nanosleep {
	return func(ns int64) {
		if ns <= 0 {
			return
		}
		t := time.NewTimer(time.Duration(ns))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// fakeEpoch is the wall time of a deterministic guest's first reading:
// 2024-01-01T00:00:00Z.
const fakeEpoch = int64(1704067200) * int64(time.Second)

// fakeClock is a deterministic clock: each reading advances it by one
// microsecond and each sleep by the time slept, without waiting.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) nanotime() int64 { return c.ns.Add(int64(time.Microsecond)) }

func (c *fakeClock) walltime() (int64, int32) {
	t := fakeEpoch + c.nanotime()
	return t / int64(time.Second), int32(t % int64(time.Second))
}

func (c *fakeClock) nanosleep(ns int64) {
	if ns > 0 {
		c.ns.Add(ns)
	}
}

// DeterministicConfig returns cfg with a fixed clock and seeded
// randomness, so a guest replays exactly, fuel included (limits.
// deterministic): walltime starts at 2024-01-01T00:00:00Z, both clocks
// advance 1µs per reading and by the requested time on sleep (which
// returns at once), and random_get reads a ChaCha8 stream seeded with
// seed. It must be applied after any WithNanosleep, which it replaces.
//
// Without it the Go runtime seeds its hash maps from random_get, which
// makes its instruction count vary by about 0.002% from run to run.
func DeterministicConfig(cfg wazero.ModuleConfig, seed int64) wazero.ModuleConfig {
	clock := &fakeClock{}
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], uint64(seed))
	return cfg.
		WithWalltime(clock.walltime, sys.ClockResolution(time.Microsecond)).
		WithNanotime(clock.nanotime, sys.ClockResolution(time.Microsecond)).
		WithNanosleep(clock.nanosleep).
		WithRandSource(rand.NewChaCha8(key))
}
