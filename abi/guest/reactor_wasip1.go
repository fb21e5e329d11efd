//go:build wasip1

package guest

import (
	"context"
	"os"
	"runtime"
	_ "unsafe" // for go:linkname

	"github.com/agenthost/agenthost/abi"
)

// The fast path (docs/ABI.md, "Fast path (reactor)"). A plugin built with
// -buildmode=c-shared is a WASI reactor: the Go runtime starts in
// _initialize and main.main is not run. The host then calls
// agenthost_init once, which runs the plugin's main; its call to [Run]
// records the handler and returns instead of serving stdin. The host
// snapshots the instance at that point and starts every call from a copy
// of the snapshot, calling agenthost_call, which serves stdin to stdout
// like a command build does and returns the exit code.
//
// In a command build (_start), these exports exist but are never called:
// the host takes the fast path only for modules that export _initialize.

// reactor is the handler recorded by Run in a reactor build. It is the
// one piece of package-level state of the SDK: a reactor has no other
// place to keep what main set up between agenthost_init and the calls
// (each call runs in a pristine copy of the instance taken right after
// agenthost_init, so nothing a call does survives it).
var reactor struct {
	init    bool    // agenthost_init is running main
	handler handler // what main passed to Run
}

//go:linkname mainMain main.main
func mainMain()

// agenthostInit runs the plugin's main, which calls Run. The host calls
// it once, after _initialize and before taking the snapshot.
//
//go:wasmexport agenthost_init
func agenthostInit() int32 {
	reactor.init = true
	mainMain()
	reactor.init = false
	if reactor.handler == nil {
		return exitFailure
	}
	// Collect now, so the snapshot holds a compact heap and every call
	// starts far from the next collection instead of each one paying for
	// it (a call starts from the same heap state every time).
	runtime.GC()
	return exitOK
}

// agenthostCall serves one call: the arguments on stdin, the result on
// stdout, the exit code returned.
//
//go:wasmexport agenthost_call
func agenthostCall() int32 {
	if reactor.handler == nil {
		return int32(writeError(os.Stdout, Errorf(abi.CodeToolError, "agenthost_call before agenthost_init")))
	}
	return int32(serve(context.Background(), os.Stdin, os.Stdout, reactor.handler))
}

// register records h when main runs under agenthost_init and reports
// whether it did; Run then returns instead of serving stdin.
func register(h handler) bool {
	if !reactor.init {
		return false
	}
	reactor.handler = h
	return true
}
