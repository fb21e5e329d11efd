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

// ReserveHeap grows the Go heap by n bytes and frees them again: the
// memory stays in the instance, as free pages of the heap the next
// allocations take before the heap grows. Call it in main before
// guest.Run (at start-up, before the host's snapshot; the SDK's warm-up
// collects the garbage before the snapshot is taken).
func ReserveHeap(n int) {
	// A size known only at run time is always allocated on the heap;
	// KeepAlive keeps the allocation from being optimised away.
	runtime.KeepAlive(make([]byte, n))
}

// Echo is a Caller that answers every call with its arguments as the
// output, through the same decoding as a host's answer, for warming an
// interpreter at start-up without a host.
func Echo(_ string, args []byte) (Response, error) {
	return decode(append([]byte{'S'}, args...))
}
