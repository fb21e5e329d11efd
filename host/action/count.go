package action

import "strings"

// countBlocks counts the ACTION start tags in s[from:to] (including ones
// that would be malformed): the blocks a model sent after the one that
// ran. It looks at each '<' once, so its cost is linear in to-from.
func countBlocks(s string, from, to int) int {
	n := 0
	for i := from; i < to; {
		j := strings.IndexByte(s[i:to], '<')
		if j < 0 {
			break
		}
		i += j
		if actionStartTag(s, i, to).kind != tagNone {
			n++
		}
		i++
	}
	return n
}
