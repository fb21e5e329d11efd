// Command hash-digest is the hash:digest tool: the SHA-256, SHA-1, MD5 or
// SHA-512 digest of a text or of a file, in hex or base64.
package main

import (
	"context"

	"github.com/agenthost/agenthost/abi/guest"
)

func main() {
	guest.Run(func(_ context.Context, in Input) (Output, error) {
		return Digest("", in)
	})
}
