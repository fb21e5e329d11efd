package main

import (
	"strconv"
	"strings"
	"unicode"
)

// escapeText makes text from manifests and tools safe to print on a
// terminal: control characters (ESC, CR, BEL, C1 controls...) become Go
// escapes such as \x1b, so a manifest cannot repaint a reviewer's screen.
// Newlines and tabs stay as they are.
func escapeText(s string) string {
	if strings.IndexFunc(s, needsEscape) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if needsEscape(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func needsEscape(r rune) bool {
	return r != '\n' && r != '\t' && (unicode.IsControl(r) || r == unicode.ReplacementChar || unicode.Is(unicode.Bidi_Control, r))
}
