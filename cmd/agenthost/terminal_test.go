package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"unicode"
)

// TestNoControlCharacters runs every human-readable command over a
// manifest full of terminal escapes and checks that no control character
// other than newline and tab reaches stdout or stderr.
func TestNoControlCharacters(t *testing.T) {
	for _, args := range [][]string{
		{"describe", "evil:paint"},
		{"list"},
		{"audit"},
		{"audit", "--format", "markdown"},
		{"validate", "testdata/hostilepack"},
		{"prompt"},
		{"describe", "evil:paint\x1b[2J"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			run(context.Background(), append(args, "--dir", "testdata/hostilepack", "--log-level", "debug"), strings.NewReader(""), &stdout, &stderr)
			if stdout.Len()+stderr.Len() == 0 {
				t.Fatal("no output: the case tests nothing")
			}
			for name, out := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String()} {
				for _, r := range out {
					if r != '\n' && r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)) {
						t.Fatalf("%s holds %U:\n%s", name, r, out)
					}
				}
			}
		})
	}
}
