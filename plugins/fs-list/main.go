// Command fs-list is the fs:list tool: lists a directory, optionally
// recursively and filtered by a glob, with a cap on the entries returned.
package main

import (
	"context"

	"github.com/agenthost/agenthost/abi/guest"
)

func main() {
	guest.Run(func(_ context.Context, in Input) (Output, error) {
		return List("", in)
	})
}
