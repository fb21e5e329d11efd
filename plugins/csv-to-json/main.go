// Command csv-to-json is the data:csv-to-json tool: parses CSV (or TSV)
// text or a file into JSON rows, keyed by the header row.
package main

import (
	"context"

	"github.com/agenthost/agenthost/abi/guest"
)

func main() {
	guest.Run(func(_ context.Context, in Input) (Output, error) {
		return Convert("", in)
	})
}
