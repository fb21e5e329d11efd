// Command agenthost loads toolpacks, runs tool calls in the WebAssembly
// sandbox, parses LLM output for <ACTION> blocks and audits grants.
// See the README for the command contract.
package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	tuneGC = true
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
