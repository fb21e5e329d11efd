// Command code-js is the code:js tool: it runs a JavaScript program
// (goja, an ECMAScript 5.1+ interpreter in Go with promises and
// async/await) in which every tool the caller may use is a function,
// reached through the agenthost_tools.call host import
// (plugins/internal/toolcall). The program's return value and its
// console log are the tool's output.
package main

import (
	"context"

	"github.com/agenthost/agenthost/abi/guest"
	"github.com/agenthost/agenthost/plugins/internal/toolcall"
)

func main() {
	warm()
	guest.Run(func(_ context.Context, in Input) (Output, error) {
		return Run(in, toolcall.Call)
	})
}
