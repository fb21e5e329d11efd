//go:build wasip1

package guest

import (
	"bytes"
	"context"
	"io"
	"os"
	"runtime"
	"syscall"
	_ "unsafe" // for go:linkname

	"github.com/agenthost/agenthost/abi"
)

// The fast path (docs/ABI.md, "Fast path (reactor)"). A plugin built with
// -buildmode=c-shared is a WASI reactor: the Go runtime starts in
// _initialize and main.main is not run. The host then calls
// agenthost_init once, which runs the plugin's main; its call to [Run]
// records the handler and returns instead of serving stdin. The host then
// calls agenthost_warm, which builds the state a call would otherwise
// rebuild each time (see agenthostWarm), snapshots the instance at that
// point and starts every call from a copy
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
	warm    func()  // builds encoding/json's state for the handler's types
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
	return exitOK
}

// agenthostWarm prepares the state the host snapshots, after
// agenthost_init: the host calls it once, without a fuel limit (it is
// work a command build does not do), and every call then starts from
// the state it leaves. See docs/POOLS.md, "Why warm the guest before
// the snapshot?".
//
//go:wasmexport agenthost_warm
func agenthostWarm() {
	if reactor.warm != nil {
		reactor.warm()
	}
	// Collect now, so the snapshot holds a compact heap and every call
	// starts far from the next collection instead of each one paying for
	// it (a call starts from the same heap state every time).
	runtime.GC()
	warm()
}

// commandStdin is a command build's stdin. A host that parks commands
// (docs/ABI.md, "Plain commands") answers the first read of stdin with
// EINTR and parks the command at the read that follows, then starts
// every call from there. The SDK takes the EINTR as the sign to warm up
// first, as agenthost_warm does for a reactor, so the parked state is
// warm; on any other host the first read returns data and nothing extra
// runs.
func commandStdin(warmTypes func()) io.Reader {
	var first [512]byte
	n, err := syscall.Read(0, first[:])
	switch {
	case err == syscall.EINTR:
		warmTypes()
		runtime.GC()
		warm()
		return os.Stdin
	case err != nil:
		return errReader{err}
	case n == 0:
		return bytes.NewReader(nil)
	}
	return io.MultiReader(bytes.NewReader(first[:n]), os.Stdin)
}

// errReader fails every read with its error.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// warmStack is how much stack warm grows the calling goroutine to.
const warmStack = 32 << 10

// warmSizes are the sizes of Go's allocation size classes up to 2 KiB
// (runtime/sizeclasses.go), one per class: the classes a call allocates
// most from. Larger classes are left out: they would add about 1 MiB of
// heap to every instance for the few calls that allocate from them.
var warmSizes = [...]int{
	8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224,
	240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768,
	896, 1024, 1152, 1280, 1408, 1536, 1792, 2048,
}

// warm undoes what the collection just did to the state every call
// starts from (docs/POOLS.md, "Why warm the runtime after the
// collection?"). A collection shrinks the goroutine's stack, which the
// host's calls run on, and empties the allocator's per-P span cache; a
// call from the snapshot would then grow the stack again (copying it)
// and refill the cache for each size class it allocates. warm grows the
// stack back and allocates one object of every small size class, with
// and without pointers, so the snapshot holds a grown stack and a span
// of each class. The objects are garbage; the spans stay cached.
func warm() {
	growStack(warmStack / 1024)
	for _, n := range warmSizes {
		warmSink = make([]byte, n)
		warmPtrSink = make([]*byte, max(n/8, 1))
	}
	warmSink, warmPtrSink = nil, nil
}

// Targets of warm's allocations, so the compiler keeps them on the heap.
var (
	warmSink    []byte
	warmPtrSink []*byte
)

// growStack uses about n KiB of stack.
//
//go:noinline
func growStack(n int) byte {
	var frame [1024]byte
	frame[n%len(frame)] = byte(n)
	if n <= 1 {
		return frame[0]
	}
	return growStack(n-1) + frame[n%len(frame)]
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

// register records h, and the warm-up of its argument and result types,
// when main runs under agenthost_init and reports whether it did; Run
// then returns instead of serving stdin.
func register(h handler, warmTypes func()) bool {
	if !reactor.init {
		return false
	}
	reactor.handler, reactor.warm = h, warmTypes
	return true
}
