// Command echo is the core:echo tool: it returns its arguments object
// unchanged. It is the smallest useful guest, used to check a host set-up
// and as the reference workload of the benchmarks.
package main

import (
	"context"
	"encoding/json"

	"github.com/agenthost/agenthost/abi/guest"
)

func main() {
	guest.Run(echo)
}

// echo returns args as given. Values are kept as raw JSON, so numbers keep
// their exact text; a null arguments value becomes {}.
func echo(_ context.Context, args map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	if args == nil {
		args = map[string]json.RawMessage{}
	}
	return args, nil
}
