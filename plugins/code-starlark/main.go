// Command code-starlark is the code:starlark tool: it runs a Starlark
// program (Python-like, deterministic) in which every tool the caller may
// use is a function, reached through the agenthost_tools.call host import
// (plugins/internal/toolcall). The program's result and its print log
// are the tool's output.
package main

import (
	"context"
	"os"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/abi/guest"
	"github.com/agenthost/agenthost/plugins/internal/toolcall"
)

func main() {
	warm()
	guest.Run(func(_ context.Context, in Input) (Output, error) {
		return Run(in, Options{MaxSteps: maxSteps(os.Args[1:]), Call: toolcall.Call})
	})
}

// maxSteps reads --maxSteps=N from the handler config (argv); anything
// else leaves the default.
func maxSteps(args []string) uint64 {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--maxSteps="); ok {
			if n, err := strconv.ParseUint(v, 10, 64); err == nil && n > 0 {
				return n
			}
		}
	}
	return DefaultMaxSteps
}
