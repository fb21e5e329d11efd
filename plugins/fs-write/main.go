// Command fs-write is the fs:write tool: writes text or base64 content to
// a file in the call's scratch folder (/tmp) or a folder the operator
// granted for writing.
package main

import (
	"context"

	"github.com/agenthost/agenthost/abi/guest"
)

func main() {
	guest.Run(func(_ context.Context, in Input) (Output, error) {
		return Write("", in)
	})
}
