// Command rawecho is the benchmark's JSON echo for raw wazero with a
// reused instance: the host writes the input into a buffer from malloc
// and calls echo, which returns the output's pointer and length packed
// into one i64.
package main

import (
	"encoding/json"
	"unsafe"
)

// keep holds the buffers the host is using so the GC does not free them.
var keep = map[uintptr][]byte{}

//go:wasmexport malloc
func malloc(n uint32) uint32 {
	b := make([]byte, n)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	keep[p] = b
	return uint32(p)
}

//go:wasmexport free
func free(p uint32) { delete(keep, uintptr(p)) }

//go:wasmexport echo
func echo(p, n uint32) uint64 {
	in := keep[uintptr(p)][:n]
	var v any
	if err := json.Unmarshal(in, &v); err != nil {
		return 0
	}
	out, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	q := uintptr(unsafe.Pointer(unsafe.SliceData(out)))
	keep[q] = out
	return uint64(q)<<32 | uint64(len(out))
}

func main() {}
