package main

import (
	"fmt"
	"os"
)

// Example runs the embedding program from the repository root, where the
// toolpacks are (built by `make toolpacks`).
func Example() {
	wd, _ := os.Getwd()
	if err := os.Chdir("../.."); err != nil {
		fmt.Println(err)
		return
	}
	defer os.Chdir(wd)
	main()
	// Output:
	// Let me count the words, then hash the text.
	// Observation: Tool text:stats executed successfully. Result: {"characters":44,"bytes":44,"words":9,"uniqueWords":8,"lines":1,"sentences":1,"paragraphs":1,"avgWordLength":3.89,"avgSentenceLength":9,"topWords":[{"word":"the","count":2},{"word":"brown","count":1},{"word":"dog","count":1},{"word":"fox","count":1},{"word":"jumps","count":1},{"word":"lazy","count":1},{"word":"over","count":1},{"word":"quick","count":1}]}
	// Observation: Tool hash:digest executed successfully. Result: {"algorithm":"sha256","encoding":"hex","digest":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824","bytes":5}
}
