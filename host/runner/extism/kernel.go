package extism

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// kernelBase is the first offset the kernel hands out; 0 means "none".
const kernelBase = 1 << 16

// block is one allocation of kernel memory. Its address range is
// [base, base+cap(data)); data has the requested length.
type block struct {
	base uint64
	data []byte
	free bool
}

// kernel is the Extism kernel (EIP-007) implemented in Go: the memory the
// plugin and the host exchange data through (input, output, errors,
// config values, vars, HTTP bodies). Plugins see it only through offsets
// and the load/store host functions, so it need not live in a Wasm
// memory; keeping it in Go makes every kernel call a direct slice access
// instead of a call into a second Wasm module.
//
// Offsets are virtual: blocks are handed out at increasing addresses, a
// freed block is reused first-fit, and a freed block at the end returns
// its range. Like the upstream kernel, a freed block stays readable until
// it is reused.
type kernel struct {
	blocks []*block // sorted by base
	last   *block   // lookup cache: the block found last
	next   uint64
	live   uint64 // bytes held by live blocks
	peak   uint64
	frees  int // freed blocks still in blocks

	// budget reports whether n more bytes may be held; nil allows all.
	budget func(live, n uint64) bool

	input          []byte
	inputOff       uint64
	outOff, outLen uint64
	errOff         uint64
}

// errKernelMemory is the trap raised when an allocation exceeds the
// memory cap.
type errKernelMemory struct{ n uint64 }

func (e errKernelMemory) Error() string {
	return fmt.Sprintf("kernel alloc of %d bytes exceeds the memory cap", e.n)
}

// reset drops every block and all call state.
func (k *kernel) reset() {
	k.blocks = k.blocks[:0]
	k.last = nil
	k.next = kernelBase
	k.live = 0
	k.frees = 0
	k.input, k.inputOff = nil, 0
	k.outOff, k.outLen, k.errOff = 0, 0, 0
}

// roundUp8 rounds n up to a multiple of 8 so 8-byte loads at the end of a
// block stay inside it.
func roundUp8(n uint64) uint64 { return (n + 7) &^ 7 }

// alloc returns the offset of a new zeroed block of n bytes (0 for n==0).
// It panics with errKernelMemory when the memory budget refuses.
func (k *kernel) alloc(n uint64) uint64 {
	if n == 0 {
		return 0
	}
	c := roundUp8(n)
	if c < n || c > 1<<32 {
		panic(errKernelMemory{n})
	}
	if k.budget != nil && !k.budget(k.live, c) {
		panic(errKernelMemory{n})
	}
	if k.frees > 0 {
		for _, b := range k.blocks {
			if b.free && uint64(cap(b.data)) >= c {
				b.free = false
				k.frees--
				b.data = b.data[:n]
				clear(b.data)
				k.live += uint64(cap(b.data))
				k.notePeak()
				return b.base
			}
		}
	}
	if k.next == 0 {
		k.next = kernelBase
	}
	b := &block{base: k.next, data: make([]byte, n, c)}
	k.next += c
	k.blocks = append(k.blocks, b)
	k.live += c
	k.notePeak()
	return b.base
}

func (k *kernel) notePeak() {
	if k.live > k.peak {
		k.peak = k.live
	}
}

// free releases the block starting at off; other offsets are ignored.
func (k *kernel) free(off uint64) {
	b := k.blockAt(off)
	if b == nil || b.free {
		return
	}
	b.free = true
	k.frees++
	k.live -= uint64(cap(b.data))
	// Give trailing free blocks' ranges back.
	for n := len(k.blocks); n > 0 && k.blocks[n-1].free; n = len(k.blocks) {
		t := k.blocks[n-1]
		k.next = t.base
		k.blocks = k.blocks[:n-1]
		k.frees--
		if k.last == t {
			k.last = nil
		}
	}
}

// find returns the block whose range holds addr, or nil.
func (k *kernel) find(addr uint64) *block {
	if b := k.last; b != nil && addr >= b.base && addr < b.base+uint64(cap(b.data)) {
		return b
	}
	i := sort.Search(len(k.blocks), func(i int) bool { return k.blocks[i].base > addr }) - 1
	if i < 0 {
		return nil
	}
	b := k.blocks[i]
	if addr >= b.base+uint64(cap(b.data)) {
		return nil
	}
	k.last = b
	return b
}

// blockAt returns the block starting exactly at off, or nil.
func (k *kernel) blockAt(off uint64) *block {
	if off == 0 {
		return nil
	}
	b := k.find(off)
	if b == nil || b.base != off {
		return nil
	}
	return b
}

// length returns the length of the live block at off, 0 otherwise.
func (k *kernel) length(off uint64) uint64 {
	b := k.blockAt(off)
	if b == nil || b.free {
		return 0
	}
	return uint64(len(b.data))
}

// span returns the n bytes at addr, which must lie in one block. It
// panics (a trap for the plugin) otherwise.
func (k *kernel) span(addr, n uint64) []byte {
	b := k.find(addr)
	if b == nil {
		panic(fmt.Errorf("kernel memory access out of bounds at offset %d", addr))
	}
	i := addr - b.base
	if i+n > uint64(cap(b.data)) || i+n < i {
		panic(fmt.Errorf("kernel memory access of %d bytes at offset %d crosses a block end", n, addr))
	}
	return b.data[i : i+n : cap(b.data)]
}

func (k *kernel) loadU8(addr uint64) uint32 { return uint32(k.span(addr, 1)[0]) }

func (k *kernel) loadU64(addr uint64) uint64 { return binary.LittleEndian.Uint64(k.span(addr, 8)) }

func (k *kernel) storeU8(addr uint64, v uint8) { k.span(addr, 1)[0] = v }

func (k *kernel) storeU64(addr, v uint64) { binary.LittleEndian.PutUint64(k.span(addr, 8), v) }

// bytesAt returns a copy of the live block at off (nil for 0 or unknown).
func (k *kernel) bytesAt(off uint64) []byte {
	b := k.blockAt(off)
	if b == nil {
		return nil
	}
	return append([]byte(nil), b.data...)
}

// write stores p in a new block and returns its offset (0 for empty p).
func (k *kernel) write(p []byte) uint64 {
	off := k.alloc(uint64(len(p)))
	if off != 0 {
		copy(k.span(off, uint64(len(p))), p)
	}
	return off
}

// setInput makes p the call's input, held in a kernel block so that
// input_offset plus load_u8 work as well as input_load_*.
func (k *kernel) setInput(p []byte) {
	k.inputOff = k.write(p)
	if k.inputOff == 0 {
		k.input = nil
		return
	}
	k.input = k.span(k.inputOff, uint64(len(p)))
}

// inputU8 and inputU64 read the input at index i; reads past the end
// trap, except that an 8-byte read may run into the block's padding.
func (k *kernel) inputU8(i uint64) uint32 {
	if i >= uint64(len(k.input)) {
		panic(fmt.Errorf("input_load_u8 at %d past the input's %d bytes", i, len(k.input)))
	}
	return uint32(k.input[i])
}

func (k *kernel) inputU64(i uint64) uint64 {
	if i+8 > uint64(cap(k.input)) || i+8 < i {
		panic(fmt.Errorf("input_load_u64 at %d past the input's %d bytes", i, len(k.input)))
	}
	return binary.LittleEndian.Uint64(k.input[i : i+8 : cap(k.input)])
}

// output returns a copy of the output the plugin set.
func (k *kernel) output() []byte {
	if k.outLen == 0 {
		return []byte{}
	}
	return append([]byte(nil), k.span(k.outOff, k.outLen)...)
}

// errorMessage returns the message set with error_set, "" if none.
func (k *kernel) errorMessage() string {
	if k.errOff == 0 {
		return ""
	}
	b := k.find(k.errOff)
	if b == nil {
		return ""
	}
	return string(b.data[k.errOff-b.base:])
}
