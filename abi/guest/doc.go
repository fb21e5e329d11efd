// Package guest is the Go SDK for agenthost tools that use the wasi-command
// ABI (docs/ABI.md, section "wasi-command"). A tool is one typed function:
//
//	package main
//
//	import (
//		"context"
//
//		"github.com/agenthost/agenthost/abi/guest"
//	)
//
//	type In struct {
//		Name string `json:"name"`
//	}
//
//	type Out struct {
//		Greeting string `json:"greeting"`
//	}
//
//	func main() {
//		guest.Run(func(ctx context.Context, in In) (Out, error) {
//			return Out{Greeting: "hello " + in.Name}, nil
//		})
//	}
//
// Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildvcs=false -o tool.wasm .
//
// [Run] reads the arguments object from stdin, calls the function, writes
// its result to stdout as JSON and exits 0. A failure is written as
// {"error":{"code","message"}} and the process exits 1. [Logf] writes a
// log line to stderr, which the host returns as the envelope's logs.
//
// The package imports only the standard library and [abi], so it adds
// little to a guest. It also compiles natively, so a tool's logic can be
// unit-tested on the host.
//
// Built with -buildmode=c-shared instead, the plugin is a WASI reactor that
// the host starts once and snapshots (docs/ABI.md, "Fast path (reactor)"):
// the SDK's agenthost_init export runs main, where Run records the
// function and returns, and each call arrives through the agenthost_call
// export, which serves stdin to stdout as above and returns the exit code.
//
// Plugins call only [Run]: the way a call reaches the function (a fresh
// process reading stdin, or an exported function of a pre-initialised
// instance) is the SDK's business, and can change without changing plugin
// code.
package guest
