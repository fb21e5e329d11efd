//go:build !unix

package wasm_test

// cpuNow is 0 where getrusage(2) does not exist: the CPU metrics read 0.
func cpuNow() int64 { return 0 }
