//go:build wasip1

package toolcall

import "unsafe"

// callTool is the host import (host/runner/wasm, "Tools as functions").
// It runs the tool named by tool[:toolLen] with the JSON arguments
// args[:argsLen] and returns the length n of its answer. If n <= outCap
// the answer is in out[:n]; otherwise nothing was written and the host
// holds the answer for the next call with toolLen 0, which must pass a
// buffer of at least n bytes.
//
//go:wasmimport agenthost_tools call
func callTool(tool unsafe.Pointer, toolLen uint32, args unsafe.Pointer, argsLen uint32, out unsafe.Pointer, outCap uint32) uint64

// buf is reused by every inner call of the program (one at a time: a
// guest is single-threaded); it grows to the largest answer seen.
var buf = make([]byte, 64<<10)

// Call makes one inner call through the host import.
func Call(tool string, args []byte) (Response, error) {
	if len(args) == 0 {
		args = []byte("{}")
	}
	tb := []byte(tool)
	n := callTool(ptr(tb), uint32(len(tb)), ptr(args), uint32(len(args)), ptr(buf), uint32(len(buf)))
	if n > uint64(len(buf)) {
		buf = make([]byte, n)
		n = callTool(nil, 0, nil, 0, ptr(buf), uint32(len(buf)))
	}
	return decode(buf[:n])
}

func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}
