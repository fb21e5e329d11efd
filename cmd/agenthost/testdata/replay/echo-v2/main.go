// Command echo-v2 is a second version of core:echo for the replay tests
// (replay --with): it returns its arguments with every string value
// upper-cased, so its output differs from 1.0.0's wherever a call passed
// a string.
package main

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/agenthost/agenthost/abi/guest"
)

func main() {
	guest.Run(echo)
}

func echo(_ context.Context, args map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(args))
	for k, v := range args {
		var s string
		if json.Unmarshal(v, &s) == nil {
			v, _ = json.Marshal(strings.ToUpper(s))
		}
		out[k] = v
	}
	return out, nil
}
