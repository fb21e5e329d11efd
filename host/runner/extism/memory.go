package extism

import "github.com/tetratelabs/wazero/experimental"

// growDoubling restores the former growth policy (doubling), for
// BenchmarkThirdParty's comparison.
var growDoubling = false

// limitMemory backs a plugin's linear memory and refuses to grow it past
// limit bytes (0 = no limit), remembering that it did so the call reports
// MEMORY_LIMIT even when the plugin then fails in its own way.
type limitMemory struct {
	limit    uint64
	buf      []byte
	exceeded bool
	// image, when set, is the memory a snapshot restores: the first
	// allocation copies it, and growth up to its size reveals it.
	image []byte
}

// Allocate implements experimental.MemoryAllocator; a limitMemory backs
// exactly one memory.
func (m *limitMemory) Allocate(_, _ uint64) experimental.LinearMemory { return m }

// Reallocate implements experimental.LinearMemory.
func (m *limitMemory) Reallocate(size uint64) []byte {
	if m.limit > 0 && size > m.limit {
		m.exceeded = true
		if m.buf != nil {
			return nil
		}
		// The initial size must be granted (wazero cannot fail it); the
		// call then fails with MEMORY_LIMIT before the plugin runs.
	}
	if m.buf == nil && m.image != nil && size <= uint64(len(m.image)) {
		// One copy of the image; growing to its size later only
		// re-slices, so the restored bytes appear without a second copy.
		m.buf = append([]byte(nil), m.image...)[:size]
		return m.buf
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	// Grow by a quarter beyond the size asked for, not by doubling: a
	// plugin grows its memory a few pages at a time, and each doubling
	// allocated (and the Go runtime zeroed) up to twice what the call
	// used; that zeroing was most of a small plugin's fresh-state cost.
	c := size + size/4
	if growDoubling {
		c = max(2*uint64(cap(m.buf)), size)
	}
	if m.limit > 0 && c > m.limit && size <= m.limit {
		c = m.limit
	}
	nb := make([]byte, size, c)
	copy(nb, m.buf)
	m.buf = nb
	return m.buf
}

// Free implements experimental.LinearMemory.
func (m *limitMemory) Free() { m.buf = nil }
