package wasm

import (
	"time"

	"github.com/agenthost/agenthost/host/runner"
)

// IsFast reports whether p runs on the fast path (a pre-initialised
// reactor).
func IsFast(p runner.Prepared) bool {
	pp, ok := p.(*prepared)
	return ok && pp.fast != nil
}

// SnapshotBytes returns the size of p's snapshot memory, 0 for a command.
func SnapshotBytes(p runner.Prepared) int {
	pp, ok := p.(*prepared)
	if !ok || pp.fast == nil {
		return 0
	}
	return len(pp.fast.memory)
}

// Reuses reports whether p keeps reusable instances.
func Reuses(p runner.Prepared) bool {
	pp, ok := p.(*prepared)
	return ok && pp.fast != nil && pp.fast.slots != nil
}

// SlotStats returns p's instance pool hits, misses and discards.
func SlotStats(p runner.Prepared) (hits, misses, discards uint64) {
	return p.(*prepared).slots().stats()
}

// NextMemory takes a buffer from p's pool, as the next call would get
// it, checks that it equals the snapshot, gives it back and returns it.
func NextMemory(p runner.Prepared) (buf []byte, pristine bool) {
	pp := p.(*prepared)
	mp := pp.fast.pool.(*memoryPool)
	buf = mp.get()
	out := append([]byte(nil), buf...)
	pristine = string(buf) == string(pp.fast.memory)
	mp.put(buf)
	return out, pristine
}

// PoolStats returns p's pool hits and misses.
func PoolStats(p runner.Prepared) (hits, misses uint64) {
	return p.(*prepared).fast.pool.(*memoryPool).stats()
}

// PoolBytes returns the bytes r's pools hold.
func PoolBytes(r *Runner) uint64 { return r.pools.inUse() }

// SetCopyRestore makes r's later pools keep instances' memories in heap
// buffers instead of copy-on-write mappings.
func SetCopyRestore(r *Runner) { r.pools.restore = restoreCopy }

// SetDropRestore makes r's later pools reset instances by dropping every
// page of their copy-on-write mappings (madvise), the former default.
func SetDropRestore(r *Runner) { r.pools.restore = restoreDrop }

// WaitReady waits until p's pool has an instance ready, for up to a
// minute, and reports whether it has.
func WaitReady(p runner.Prepared) bool {
	sp := p.(*prepared).slots()
	for range 6000 {
		if len(sp.ready) > 0 {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// WaitFull asks p's pool for PoolTarget instances, waits until it holds
// them ready, for up to a minute, and reports whether it does.
func WaitFull(p runner.Prepared) bool {
	sp := p.(*prepared).slots()
	for range PoolTarget {
		sp.want()
	}
	for range 6000 {
		if len(sp.ready) == PoolTarget {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// PoolEnded reports whether p's pool goroutine has ended.
func PoolEnded(p runner.Prepared) bool {
	select {
	case <-p.(*prepared).slots().done:
		return true
	default:
		return false
	}
}

// Rebalance runs r's periodic pool rebalance now.
func Rebalance(r *Runner) { r.pools.rebalance() }

// PoolLive returns how many instances p's pool has and wants.
func PoolLive(p runner.Prepared) (live, target int) {
	sp := p.(*prepared).slots()
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.live, sp.target
}

// PoolWaits returns how many calls of p waited for an instance.
func PoolWaits(p runner.Prepared) uint64 { return p.(*prepared).slots().waits.Load() }

// InstanceCharge returns what p's pool charges a new instance now.
func InstanceCharge(p runner.Prepared) uint64 {
	sp := p.(*prepared).slots()
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.estimate
}

// InstanceOverhead is the fixed part of an instance's charge.
const InstanceOverhead = instanceOverhead

// Parks reports whether p is a command whose instances are parked.
func Parks(p runner.Prepared) bool {
	pp, ok := p.(*prepared)
	return ok && pp.command != nil
}

// WaitParked waits, for up to a minute, until p's pool has an instance
// ready or has stopped making them, and reports whether one is ready.
func WaitParked(p runner.Prepared) bool {
	sp := p.(*prepared).slots()
	for range 6000 {
		if len(sp.ready) > 0 {
			return true
		}
		sp.mu.Lock()
		failed := sp.failed
		sp.mu.Unlock()
		if failed {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// ParkRetire is how many calls a parked instance serves.
const ParkRetire = parkRetire

// BreakPool makes p's pool unable to make instances, as when memory runs
// out: its snapshot image is closed (mappings of it fail), its ready
// instances are dropped and it is asked for new ones.
func BreakPool(p runner.Prepared) {
	sp := p.(*prepared).slots()
	sp.closeImage()
	for {
		select {
		case s := <-sp.ready:
			sp.drop(s)
			continue
		default:
		}
		break
	}
	sp.signal()
}

// FreshReady returns how many of p's ready instances never served a call.
func FreshReady(p runner.Prepared) int {
	sp := p.(*prepared).slots()
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.fresh
}
