package main

import (
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// escapeText makes text from manifests and tools safe to print on a
// terminal: control characters (ESC, CR, BEL, C1 controls, bidirectional
// overrides...) become Go escapes such as \x1b, so a manifest cannot
// repaint a reviewer's screen. Newlines and tabs stay as they are.
func escapeText(s string) string {
	if strings.IndexFunc(s, needsEscape) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if needsEscape(r) {
			b.WriteString(escapeRune(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func escapeRune(r rune) string {
	q := strconv.QuoteRune(r)
	return q[1 : len(q)-1]
}

func needsEscape(r rune) bool {
	return r != '\n' && r != '\t' && (unicode.IsControl(r) || r == utf8.RuneError || unicode.Is(unicode.Bidi_Control, r))
}

// termWriter escapes control characters in everything written through it
// (see escapeText). It keeps an incomplete UTF-8 sequence at the end of a
// write until the next one, so a character split across writes is judged
// whole. Flush writes what is held back.
type termWriter struct {
	w    io.Writer
	tail []byte
}

func (t *termWriter) Write(p []byte) (int, error) {
	buf := append(t.tail, p...)
	cut := len(buf)
	// Hold back a trailing incomplete UTF-8 sequence (at most 3 bytes).
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-3; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				cut = i
			}
			break
		}
	}
	t.tail = append([]byte(nil), buf[cut:]...)
	if _, err := io.WriteString(t.w, escapeText(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a held-back incomplete sequence, escaped.
func (t *termWriter) Flush() error {
	if len(t.tail) == 0 {
		return nil
	}
	_, err := io.WriteString(t.w, escapeText(string(t.tail)))
	t.tail = nil
	return err
}
