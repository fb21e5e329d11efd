package wasm

import (
	"sync"

	"github.com/tetratelabs/wazero/experimental"
)

// memoryCap is the per-call memory limit. It is an experimental.MemoryAllocator
// attached to the call's context, so each call has its own cap while all
// calls share one runtime and its compiled modules (the runtime-wide
// RuntimeConfig.WithMemoryLimitPages could only give one cap per runtime).
// A memory.grow past the cap fails (returns -1 to the guest) and is
// recorded, so the call reports MEMORY_LIMIT if the guest then fails in
// any way (exits non-zero, traps, times out); a guest that copes with the
// failed grow and exits 0 succeeds.
type memoryCap struct {
	limit uint64
	// tooSmall is called when the module's initial memory is already
	// above the cap; it stops the call before the guest runs.
	tooSmall func()

	mu      sync.Mutex
	size    uint64 // current (= peak) linear memory size in bytes
	reached bool
	asked   uint64 // the size that was refused
}

// Allocate implements experimental.MemoryAllocator.
func (m *memoryCap) Allocate(capHint, max uint64) experimental.LinearMemory {
	return &cappedMemory{cap: m, max: max, hint: capHint}
}

func (m *memoryCap) grow(size uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if size > m.limit {
		m.reached, m.asked = true, size
		return false
	}
	if size > m.size {
		m.size = size
	}
	return true
}

// state returns the memory size and whether the cap was reached.
func (m *memoryCap) state() (size uint64, reached bool, asked uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.size, m.reached, m.asked
}

// cappedMemory is one linear memory under a memoryCap.
type cappedMemory struct {
	cap  *memoryCap
	max  uint64
	hint uint64 // wazero's suggested initial capacity
	buf  []byte
}

// Reallocate implements experimental.LinearMemory. It returns nil (the
// grow fails) past the cap. The first allocation (the module's initial
// memory) is never refused, because wazero cannot fail it gracefully: an
// initial memory above the cap is reported and the call is stopped
// through tooSmall before the guest runs.
func (c *cappedMemory) Reallocate(size uint64) []byte {
	if !c.cap.grow(size) {
		if c.buf != nil {
			return nil
		}
		if c.cap.tooSmall != nil {
			c.cap.tooSmall()
		}
	}
	if size <= uint64(cap(c.buf)) {
		c.buf = c.buf[:size]
		return c.buf
	}
	// Grow by a quarter, as append does for large slices: guests grow in
	// small steps (the Go runtime from 2.25 to 2.9 MiB while starting),
	// and doubling would allocate and clear memory they never use.
	newCap := size + size/4
	if c.buf == nil && size < 1<<20 {
		// A small initial memory gets exactly what wazero suggests (the
		// module's minimum): tiny guests rarely grow. A large one keeps
		// the quarter of headroom: the Go runtime grows from 2.25 MiB to
		// exactly 1.25 times that while starting.
		newCap = max(size, c.hint)
	}
	if newCap > c.cap.limit {
		newCap = c.cap.limit
	}
	if c.max > 0 && newCap > c.max {
		newCap = c.max
	}
	if newCap < size {
		newCap = size
	}
	buf := make([]byte, size, newCap)
	copy(buf, c.buf)
	c.buf = buf
	return buf
}

// Free implements experimental.LinearMemory.
func (c *cappedMemory) Free() { c.buf = nil }

// Interface guards
var (
	_ experimental.MemoryAllocator = (*memoryCap)(nil)
	_ experimental.LinearMemory    = (*cappedMemory)(nil)
)
