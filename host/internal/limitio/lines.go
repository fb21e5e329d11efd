package limitio

import (
	"bytes"
	"strings"
	"sync"
)

// TruncatedMarker ends the last kept line once a [Lines] budget is used up.
const TruncatedMarker = "…[truncated]"

// DefaultLogBytes is the log budget of a call.
const DefaultLogBytes = 64 << 10

// Lines collects log lines under a total byte budget. Bytes written with
// Write are split on '\n' (a trailing '\r' is dropped); Add appends one
// whole line (host notes). Once the budget is used up, the last line kept
// ends with [TruncatedMarker] and everything else is dropped. Write never
// fails, so a chatty guest is never stopped for its logs.
type Lines struct {
	mu        sync.Mutex
	lines     []string
	partial   []byte
	used      int
	limit     int
	truncated bool
}

// NewLines returns a collector with a budget of limit bytes of line text
// (limit <= 0 means [DefaultLogBytes]).
func NewLines(limit int) *Lines {
	if limit <= 0 {
		limit = DefaultLogBytes
	}
	return &Lines{limit: limit}
}

// Write implements io.Writer; it always reports len(p) written.
func (l *Lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 && !l.truncated {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			// Keep at most the remaining budget (+1 so the overflow is seen).
			room := l.limit - l.used - len(l.partial) + 1
			if room > len(p) {
				room = len(p)
			}
			if room > 0 {
				l.partial = append(l.partial, p[:room]...)
			}
			if l.used+len(l.partial) > l.limit {
				l.flushLocked()
			}
			break
		}
		l.partial = append(l.partial, p[:i]...)
		l.flushLocked()
		p = p[i+1:]
	}
	return n, nil
}

// Add appends one line.
func (l *Lines) Add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.flushLocked()
	}
	l.addLocked(line)
}

// Lines returns the collected lines, including a pending unterminated
// line. It never returns nil.
func (l *Lines) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.flushLocked()
	}
	out := make([]string, len(l.lines))
	copy(out, l.lines)
	return out
}

// Truncated reports whether lines were dropped or cut.
func (l *Lines) Truncated() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.truncated
}

func (l *Lines) flushLocked() {
	s := strings.TrimSuffix(string(l.partial), "\r")
	l.partial = l.partial[:0]
	l.addLocked(s)
}

func (l *Lines) addLocked(s string) {
	if l.truncated {
		return
	}
	if l.used+len(s) <= l.limit {
		l.lines = append(l.lines, s)
		l.used += len(s)
		return
	}
	room := l.limit - l.used
	if room < 0 {
		room = 0
	}
	cut := validPrefix(s, room)
	l.lines = append(l.lines, cut+TruncatedMarker)
	l.used = l.limit
	l.truncated = true
}

// validPrefix returns the longest prefix of s of at most n bytes that does
// not split a UTF-8 sequence.
func validPrefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
