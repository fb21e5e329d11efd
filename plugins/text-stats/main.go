// Command text-stats is the text:stats tool: counts and word frequencies
// of a text (characters, bytes, words, lines, sentences, paragraphs,
// average lengths, the most frequent words).
package main

import (
	"context"

	"github.com/agenthost/agenthost/abi/guest"
)

func main() {
	guest.Run(func(_ context.Context, in Input) (Stats, error) {
		return Analyze(in)
	})
}
