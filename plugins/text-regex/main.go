// Command text-regex is the text:regex tool: tests, finds, replaces or
// splits with a Go RE2 regular expression (linear time, no backtracking),
// with a cap on the number of matches.
package main

import (
	"context"

	"github.com/agenthost/agenthost/abi/guest"
)

func main() {
	guest.Run(func(_ context.Context, in Input) (Output, error) {
		return Apply(in)
	})
}
