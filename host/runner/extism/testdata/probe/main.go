// Command probe is the runner's test plugin, written with abi/pdk. Each
// export exercises one feature of the Extism ABI; the tests pick one with
// handler.entryPoint.
package main

import (
	"errors"
	"os"
	"strings"

	"github.com/agenthost/agenthost/abi/pdk"
)

// config returns the value of the config key named by the input.
//
//go:wasmexport config
func config() int32 {
	v, ok := pdk.Config(string(pdk.Input()))
	if !ok {
		v = "<unset>"
	}
	pdk.Output([]byte(v))
	return 0
}

// vars counts its calls in a var: every call sees a fresh instance, so
// the answer is always 1.
//
//go:wasmexport vars
func vars() int32 {
	n := byte(0)
	if b, ok := pdk.GetVar("count"); ok && len(b) == 1 {
		n = b[0]
	}
	n++
	pdk.SetVar("count", []byte{n})
	b, _ := pdk.GetVar("count")
	pdk.Output([]byte{'0' + b[0]})
	return 0
}

// logs logs at every level and prints to stdout and stderr.
//
//go:wasmexport logs
func logs() int32 {
	pdk.Log(pdk.LogTrace, "a trace line")
	pdk.Log(pdk.LogDebug, "a debug line")
	pdk.Log(pdk.LogInfo, "an info line")
	pdk.Log(pdk.LogWarn, "a warn line")
	pdk.Log(pdk.LogError, "an error line")
	println("to stderr")
	pdk.Output([]byte(`"ok"`))
	return 0
}

// chatty logs far more than the log budget.
//
//go:wasmexport chatty
func chatty() int32 {
	line := strings.Repeat("x", 1000)
	for i := 0; i < 200; i++ {
		pdk.Log(pdk.LogInfo, line)
	}
	return 0
}

// fail sets an error message.
//
//go:wasmexport fail
func fail() int32 {
	pdk.SetError(errors.New("the probe failed on purpose"))
	return 1
}

// rc returns a non-zero code without a message.
//
//go:wasmexport rc
func rc() int32 { return 3 }

// crash panics (a Go runtime exit).
//
//go:wasmexport crash
func crash() int32 { panic("probe panic") }

// spin never returns.
//
//go:wasmexport spin
func spin() int32 {
	for i := 0; ; i++ {
		if i < 0 {
			return 0
		}
	}
}

// grow allocates Go memory until the host refuses.
//
//go:wasmexport grow
func grow() int32 {
	var hold [][]byte
	for {
		hold = append(hold, make([]byte, 8<<20))
		hold[len(hold)-1][0] = 1
	}
}

// kernelgrow allocates kernel memory until the host refuses.
//
//go:wasmexport kernelgrow
func kernelgrow() int32 {
	for {
		pdk.Alloc(8 << 20)
	}
}

// big outputs 2 MiB.
//
//go:wasmexport big
func big() int32 {
	pdk.Output(make([]byte, 2<<20))
	return 0
}

// fetch fetches the URL in its input and outputs status and body.
//
//go:wasmexport fetch
func fetch() int32 {
	resp := pdk.Fetch(pdk.HTTPRequest{URL: string(pdk.Input())}, nil)
	if resp.Status != 200 {
		pdk.SetError(errors.New("status " + string(rune('0'+resp.Status/100)) + "xx"))
		return 1
	}
	pdk.Output(resp.Body)
	return 0
}

// echo returns its input.
//
//go:wasmexport echo
func echo() int32 {
	pdk.Output(pdk.Input())
	return 0
}

func main() {}

// calls counts this instance's calls in Go memory.
var calls int

// counter increments a Go global: with a fresh instance (or a fresh copy
// of the initialised snapshot) per call it always outputs 1.
//
//go:wasmexport counter
func counter() int32 {
	calls++
	pdk.Output([]byte{'0' + byte(calls)})
	return 0
}

// readfile reads the file named by the input through WASI (the preopens
// the host grants, as a wasi-command tool gets) and outputs its content;
// a refused or missing file is an error.
//
//go:wasmexport readfile
func readfile() int32 {
	b, err := os.ReadFile(string(pdk.Input()))
	if err != nil {
		pdk.SetError(err)
		return 1
	}
	pdk.Output(b)
	return 0
}
