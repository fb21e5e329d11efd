package wasm_test

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/wasm"
)

// pooledProbe prepares the probe guest on a runner with a 64 MiB pool
// budget and waits until its pool has an instance ready (full: every
// instance it may have).
func pooledProbe(t *testing.T, full bool) (*wasm.Runner, runner.Prepared) {
	t.Helper()
	r := newPoolRunner(t, 64<<20)
	p := prepare(t, r, probeGuest(t, modeReactor), newEnv(t), nil)
	wait := wasm.WaitReady
	if full {
		wait = wasm.WaitFull
	}
	if !wait(p) {
		t.Fatal("the pool made no instance")
	}
	return r, p
}

// TestPool_chargesRealCost: a pooled instance is charged wazero's objects
// and the pages its calls wrote, far less than the snapshot it maps.
func TestPool_chargesRealCost(t *testing.T) {
	r, p := pooledProbe(t, true)
	for range 4 * PoolTargetCalls {
		decodeProbe(t, run(t, p, `{"op":"echo"}`))
	}
	wasm.WaitFull(p)
	used, size := wasm.PoolBytes(r), uint64(wasm.SnapshotBytes(p))
	live, _ := wasm.PoolLive(p)
	if used < uint64(live)*wasm.InstanceOverhead || used >= uint64(live)*size {
		t.Fatalf("%d instances charged %d bytes: want at least %d each, less than the snapshot's %d", live, used, wasm.InstanceOverhead, size)
	}
	if c := wasm.InstanceCharge(p); c <= wasm.InstanceOverhead {
		t.Fatalf("charge %d: the written pages were not counted", c)
	}
}

// TestPool_sharesByDemand: when the budget is spent, a tool in demand
// takes the instance of an idle one, not the other way round; a tool not
// yet called takes none; an idle pool shrinks to one instance.
func TestPool_sharesByDemand(t *testing.T) {
	e := newEnv(t)
	probe := probeGuest(t, modeReactor)
	sizer := newPoolRunner(t, 64<<20)
	est := wasm.InstanceCharge(prepare(t, sizer, probe, e, nil))
	r := newPoolRunner(t, 2*est+est/2)
	busy := prepare(t, r, probe, e, nil)
	if !wasm.WaitReady(busy) {
		t.Fatal("no instance for the first tool")
	}
	// Before its first call a tool takes free budget only: the second
	// tool gets none and says so; the first keeps both of its instances.
	idle := prepare(t, r, probe, e, nil)
	if got := warmState(idle); got != wasm.WarmNoBudget {
		t.Fatalf("the second tool's pool is %v, want %v", got, wasm.WarmNoBudget)
	}
	if live, _ := wasm.PoolLive(busy); live != 2 {
		t.Fatalf("warming the second tool left the first %d instances", live)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				if res := run(t, busy, `{"op":"echo"}`); res.Err != nil {
					t.Error(res.Err)
					return
				}
			}
		})
	}
	wg.Wait()
	if live, _ := wasm.PoolLive(busy); live < 2 {
		t.Fatalf("the busy tool has %d instances", live)
	}
	if live, _ := wasm.PoolLive(idle); live != 0 {
		t.Fatalf("the idle tool kept %d instances", live)
	}
	// The idle tool still answers (from a fresh instance) and cannot take
	// the busy tool's instances with one call.
	decodeProbe(t, run(t, idle, `{"op":"echo"}`))
	if live, _ := wasm.PoolLive(busy); live < 2 {
		t.Fatalf("one call of the idle tool took the busy tool's instances: %d left", live)
	}
	// Each rebalance is a tick without demand. An instance still being
	// restored after the last call is shed by a later tick, so tick until
	// the pool has shrunk (or give up).
	for i := 0; ; i++ {
		wasm.Rebalance(r)
		live, target := wasm.PoolLive(busy)
		if i >= 3 && live == 1 && target == 1 {
			break
		}
		if i == 1000 {
			t.Fatalf("idle now, the busy tool keeps %d instances (wants %d)", live, target)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if used := wasm.PoolBytes(r); used > 2*est+est/2 {
		t.Fatalf("after rebalancing, the pools hold %d bytes, over the budget %d", used, 2*est+est/2)
	}
}

// TestFreshInstance_mappingsReleased: a fresh instance's memory is a
// private mapping of the snapshot (no Go heap), released after the call:
// many calls leave no mapping behind, and each starts from the snapshot.
func TestFreshInstance_mappingsReleased(t *testing.T) {
	if _, err := os.Stat("/proc/self/maps"); err != nil {
		t.Skip("no /proc/self/maps")
	}
	e := newEnv(t)
	r := newPoolRunner(t, 0) // no pool: every call is a fresh instance
	p := prepare(t, r, probeGuest(t, modeReactor), e, nil)
	before := snapshotMappings(t)
	for range 50 {
		if o := decodeProbe(t, run(t, p, `{"op":"echo"}`)); o.Calls != 1 {
			t.Fatalf("a fresh instance saw %d calls", o.Calls)
		}
	}
	if after := snapshotMappings(t); after > before {
		t.Fatalf("%d snapshot mappings after 50 calls, %d before", after, before)
	}
}

// snapshotMappings counts the process's mappings of snapshot memfds.
func snapshotMappings(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "memfd:agenthost-snapshot")
}
