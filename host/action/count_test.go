package action_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/action"
)

// TestIgnoredBlocks pins the count of ACTION blocks after the one that
// runs (a second block used to be dropped without a word).
func TestIgnoredBlocks(t *testing.T) {
	tests := []struct {
		name, in string
		want     int
	}{
		{"one block", "<ACTION><core:echo/></ACTION>", 0},
		{"two blocks", "<ACTION><core:echo/></ACTION>\n<ACTION><core:echo/></ACTION>", 1},
		{"three, mixed case", "<ACTION><a:b/></ACTION> <action><a:b/></action> <Action x='1'><a:b/></Action>", 2},
		{"broken later block still counts", "<ACTION><a:b/></ACTION> then <ACTION/>", 1},
		{"not a tag", "<ACTION><a:b/></ACTION> <ACTIONS> <action_plan>", 0},
		{"trailing text only", "<ACTION><a:b/></ACTION> done", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := action.Parse(tc.in, action.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.IgnoredBlocks != tc.want {
				t.Fatalf("IgnoredBlocks = %d, want %d", res.IgnoredBlocks, tc.want)
			}
		})
	}
}

// BenchmarkIgnoredBlocks shows the count is linear in the text after the
// block: ns/op per MiB stays flat from 1 to 4 MiB.
func BenchmarkIgnoredBlocks(b *testing.B) {
	for _, mib := range []int{1, 4} {
		tail := strings.Repeat("<ACTION <x <ACTIO ", (mib<<20)/18)
		in := "<ACTION><a:b/></ACTION>" + tail
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				_, _ = action.Parse(in, action.Options{})
			}
		})
	}
}
