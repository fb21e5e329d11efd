package toolcall

import "runtime"

// Headroom is the free heap a code-mode guest keeps in its start-up
// snapshot (ReserveHeap). The host reuses a pooled instance only while
// its memory has not grown, and a program that needs more pages than the
// snapshot's heap has free grows it: without headroom nearly every
// program did (by 256–512 KiB), so every program paid a copy of the
// whole memory and a fresh instance. The pages are never written, so a
// pooled instance shares them with the snapshot until a program uses
// them.
const Headroom = 8 << 20

// ReserveHeap grows the Go heap by about n bytes and frees them again:
// the memory stays in the instance, as free pages of the heap the next
// allocations take before the heap grows. It allocates objects of many
// size classes rather than one block, so the runtime also makes the span
// records (allocated outside the heap, 256 KiB at a time) that a
// program's small allocations need; freed, they are reused. Call it in
// main before guest.Run (at start-up, before the host's snapshot; the
// SDK's warm-up collects the garbage before the snapshot is taken).
func ReserveHeap(n int) {
	sizes := [...]int{16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 2048, 4096, 8192}
	var held [][]byte
	for total := 0; total < n; {
		for _, size := range sizes {
			held = append(held, make([]byte, size))
			total += size
		}
	}
	runtime.KeepAlive(held)
}

// Echo is a Caller that answers every call with its arguments as the
// output, through the same decoding as a host's answer, for warming an
// interpreter at start-up without a host.
func Echo(_ string, args []byte) (Response, error) {
	return decode(append([]byte{'S'}, args...))
}
