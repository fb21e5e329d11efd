package wasm_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/wasm"
)

// warmState waits for p's pool's first fill and returns what it holds.
func warmState(p runner.Prepared) wasm.WarmState {
	return p.(interface {
		Warm(context.Context) wasm.WarmState
	}).Warm(context.Background())
}

// TestWarm: a new tool's first calls wait for the instances its pool is
// making instead of each making its own, and Warm says what the pool
// holds.
func TestWarm(t *testing.T) {
	e := newEnv(t)
	probe := probeGuest(t, modeReactor)
	tests := []struct {
		name   string
		budget uint64
		warm   bool // Warm before the calls
		want   wasm.WarmState
	}{
		{"calls at once after Prepare", 64 << 20, false, wasm.WarmReady},
		{"warmed first", 64 << 20, true, wasm.WarmReady},
		{"no budget: every call makes its instance", 0, true, wasm.WarmNone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := prepare(t, newPoolRunner(t, tc.budget), probe, e, nil)
			if tc.warm {
				if got := warmState(p); got != tc.want {
					t.Fatalf("Warm = %v, want %v", got, tc.want)
				}
			}
			for i := range 5 {
				decodeProbe(t, run(t, p, `{"op":"echo"}`))
				// The first call waits for the pool's first fill rather
				// than making its own instance. A later call may find
				// the instance it would take still being restored by
				// the pool (a loaded machine) and make its own: that is
				// the design, so only the first is held to a hit.
				if st := p.(runner.Statser).PoolStats(); i == 0 && tc.want == wasm.WarmReady && (st.Misses != 0 || st.Hits != 1) {
					t.Fatalf("first call: pool stats %+v: want 1 hit, no miss", st)
				}
			}
			if got := warmState(p); got != tc.want {
				t.Fatalf("after the calls, Warm = %v, want %v", got, tc.want)
			}
			st := p.(runner.Statser).PoolStats()
			if tc.want == wasm.WarmReady && st.Hits+st.Misses != 5 {
				t.Fatalf("pool stats %+v: want 5 calls counted", st)
			}
		})
	}
}

// TestWarm_usedFirst: calls one after another on a warm pool run on the
// instance of the first call, restored, and leave the pool's other new
// instance for a call that comes while that one is busy: a new
// instance's first call is the slowest.
func TestWarm_usedFirst(t *testing.T) {
	p := prepare(t, newPoolRunner(t, 64<<20), probeGuest(t, modeReactor), newEnv(t), nil)
	if got := warmState(p); got != wasm.WarmReady {
		t.Fatalf("Warm = %v, want ready", got)
	}
	if n := wasm.FreshReady(p); n != 2 {
		t.Fatalf("%d new instances after Warm, want 2", n)
	}
	for range 5 {
		decodeProbe(t, run(t, p, `{"op":"echo"}`))
	}
	if n := wasm.FreshReady(p); n != 1 {
		t.Fatalf("%d new instances left after 5 calls one after another, want 1", n)
	}
}

// TestWarm_fillFails: when the pool cannot make an instance (here its
// snapshot image can no longer be mapped, as when memory runs out) the
// tool's calls still succeed, each on an instance of its own, and the
// failure is logged once.
func TestWarm_fillFails(t *testing.T) {
	var logs syncBuffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})
	r, err := wasm.New(context.Background(), wasm.Options{Logger: logger, PoolMemoryBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	p := prepare(t, r, probeGuest(t, modeReactor), newEnv(t), nil)
	if got := warmState(p); got != wasm.WarmReady {
		t.Fatalf("Warm = %v, want ready", got)
	}
	wasm.BreakPool(p)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range 10 {
				if res, err := p.Run(context.Background(), runner.Request{Input: []byte(`{"op":"echo"}`)}); err != nil || res.Err != nil {
					t.Errorf("call failed: %v %v", err, res.Err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := warmState(p); got != wasm.WarmFailed {
		t.Errorf("Warm = %v, want failed", got)
	}
	if n := strings.Count(logs.String(), "pool: cannot make an instance"); n != 1 {
		t.Errorf("the failure was logged %d times, want once:\n%s", n, logs.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
