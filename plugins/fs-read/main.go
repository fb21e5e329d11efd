// Command fs-read is the fs:read tool: reads a file (or a byte range of
// it) as UTF-8 text or base64.
package main

import (
	"context"

	"github.com/agenthost/agenthost/abi/guest"
)

func main() {
	guest.Run(func(_ context.Context, in Input) (Output, error) {
		return Read("", in)
	})
}
