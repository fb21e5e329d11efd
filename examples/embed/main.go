// Command embed is a host application that embeds agenthost: it loads the
// toolpacks, runs one model turn's tool calls and prints the observation
// that would go back to the model.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agenthost/agenthost/host"
)

const modelOutput = `Let me count the words, then hash the text.
<ACTION>
  <text:stats><text>The quick brown fox jumps over the lazy dog.</text></text:stats>
  <hash:digest><text>hello</text><algorithm>sha256</algorithm></hash:digest>
</ACTION>`

func main() {
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{Dirs: []string{"toolpacks"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer h.Close(ctx)
	turn := h.Exec(ctx, modelOutput)
	fmt.Println(turn.ResponseText)
	fmt.Println(turn.Observation)
}
