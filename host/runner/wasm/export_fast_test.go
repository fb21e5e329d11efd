package wasm

import "github.com/agenthost/agenthost/host/runner"

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

// NextMemory takes a buffer from p's pool, as the next call would get
// it, checks that it equals the snapshot, gives it back and returns it.
func NextMemory(p runner.Prepared) (buf []byte, pristine bool) {
	pp := p.(*prepared)
	buf = pp.fast.pool.get()
	out := append([]byte(nil), buf...)
	pristine = string(buf) == string(pp.fast.memory)
	pp.fast.pool.put(buf)
	return out, pristine
}

// PoolStats returns p's pool hits and misses.
func PoolStats(p runner.Prepared) (hits, misses uint64) {
	return p.(*prepared).fast.pool.stats()
}

// PoolBytes returns the bytes r's pools hold.
func PoolBytes(r *Runner) uint64 { return r.pools.inUse() }
