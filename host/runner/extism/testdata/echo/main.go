// Command echo is the benchmark's JSON echo on the Extism ABI, written
// with abi/pdk: it decodes the input into a generic value and encodes it
// back, the same work as wasiecho and rawecho.
package main

import "github.com/agenthost/agenthost/abi/pdk"

//go:wasmexport call
func call() int32 {
	return pdk.Handle(func(v any) (any, error) { return v, nil })
}

func main() {}
