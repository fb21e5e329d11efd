// Command text-diff is the text:diff tool: a line-by-line comparison of
// two texts as a unified diff (the format of `diff -u` and `git diff`),
// with counts of added and removed lines.
package main

import (
	"context"

	"github.com/agenthost/agenthost/abi/guest"
)

func main() {
	guest.Run(func(_ context.Context, in Input) (Output, error) {
		return Diff(in)
	})
}
