// Package unidiff compares two texts line by line and writes the
// differences as a unified diff (diff -u's format). It is shared by the
// text:diff tool (plugins/text-diff) and the host's reviews of changed
// definitions (mcp-import diff), so both show the same diffs.
package unidiff

import (
	"strconv"
	"strings"
)

// Result is a comparison. Diff is empty when the texts are identical.
type Result struct {
	Identical bool
	Added     int // lines added
	Removed   int // lines removed
	Hunks     int
	Diff      string
}

// Unified compares from and to line by line and returns a unified diff
// with context lines of context, headed by the two labels. Lines are
// compared exactly, including their line terminator, so a last line
// without a newline differs from the same line with one ("\ No newline
// at end of file" is written as diff does). It returns false when the
// texts differ in more than maxEdits lines (lines added plus removed,
// after the common head and tail are set aside): the algorithm's memory
// grows with the square of that number.
func Unified(from, to, fromLabel, toLabel string, context, maxEdits int) (Result, bool) {
	a, b := SplitLines(from), SplitLines(to)
	script, ok := editScript(a, b, maxEdits)
	if !ok {
		return Result{}, false
	}
	out := Result{Identical: true}
	for _, s := range script {
		switch s.kind {
		case del:
			out.Removed++
			out.Identical = false
		case ins:
			out.Added++
			out.Identical = false
		}
	}
	if out.Identical {
		return out, true
	}
	var sb strings.Builder
	sb.WriteString("--- " + fromLabel + "\n+++ " + toLabel + "\n")
	for _, h := range hunks(script, context) {
		out.Hunks++
		writeHunk(&sb, script[h[0]:h[1]], a, b)
	}
	out.Diff = sb.String()
	return out, true
}

// kind is the kind of one edit-script step.
type kind byte

const (
	same kind = iota
	del
	ins
)

// step is one line of the edit script: a line of From (del), of To (ins)
// or of both (same). A and B are the line indexes in From and To before
// the step.
type step struct {
	kind kind
	a, b int
}

// SplitLines splits s after each "\n"; the last line may lack one.
func SplitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// editScript returns a shortest edit script turning a into b (Myers'
// O(ND) algorithm, after the common head and tail are set aside), or
// false if it needs more than limit insertions and deletions.
func editScript(a, b []string, limit int) ([]step, bool) {
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	mid, ok := myers(a[head:len(a)-tail], b[head:len(b)-tail], limit)
	if !ok {
		return nil, false
	}
	script := make([]step, 0, head+len(mid)+tail)
	for i := 0; i < head; i++ {
		script = append(script, step{same, i, i})
	}
	for _, s := range mid {
		script = append(script, step{s.kind, s.a + head, s.b + head})
	}
	for i := 0; i < tail; i++ {
		script = append(script, step{same, len(a) - tail + i, len(b) - tail + i})
	}
	return script, true
}

// myers is the greedy forward algorithm of Myers (1986) with the furthest
// reaching x of every diagonal kept per edit distance d, then walked back.
func myers(a, b []string, limit int) ([]step, bool) {
	n, m := len(a), len(b)
	most := n + m
	off := most + 1
	v := make([]int, 2*most+3)
	// trace[d][k+d] is the furthest x on diagonal k after d edits.
	var trace [][]int32
	for d := 0; d <= most; d++ {
		if d > limit {
			return nil, false
		}
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: an insertion
			} else {
				x = v[off+k-1] + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				trace = append(trace, window(v, off, d))
				return backtrack(trace, n, m), true
			}
		}
		trace = append(trace, window(v, off, d))
	}
	return nil, false // unreachable: d = n+m always reaches the end
}

// window copies v's diagonals -d..d.
func window(v []int, off, d int) []int32 {
	w := make([]int32, 2*d+1)
	for i := range w {
		w[i] = int32(v[off-d+i])
	}
	return w
}

// backtrack walks the trace from (n, m) back to (0, 0).
func backtrack(trace [][]int32, n, m int) []step {
	var rev []step
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		prev := trace[d-1]
		at := func(k int) int { return int(prev[k+d-1]) }
		k := x - y
		var prevK int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := at(prevK)
		prevY := prevX - prevK
		midX, midY := prevX+1, prevY // after a deletion
		if prevK == k+1 {
			midX, midY = prevX, prevY+1 // after an insertion
		}
		for x > midX && y > midY {
			x, y = x-1, y-1
			rev = append(rev, step{same, x, y})
		}
		if prevK == k+1 {
			rev = append(rev, step{ins, prevX, prevY})
		} else {
			rev = append(rev, step{del, prevX, prevY})
		}
		x, y = prevX, prevY
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		rev = append(rev, step{same, x, y})
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// hunks returns the [start, end) ranges of script to print: every change
// with up to ctx unchanged lines around it, merging changes whose context
// would touch or overlap.
func hunks(script []step, ctx int) [][2]int {
	var out [][2]int
	for i := 0; i < len(script); {
		if script[i].kind == same {
			i++
			continue
		}
		start := max(i-ctx, 0)
		end := i
		for end < len(script) {
			if script[end].kind != same {
				end++
				continue
			}
			run := end
			for run < len(script) && script[run].kind == same {
				run++
			}
			if run == len(script) || run-end > 2*ctx {
				end = min(end+ctx, len(script))
				break
			}
			end = run
		}
		if len(out) > 0 && start < out[len(out)-1][1] {
			start = out[len(out)-1][1]
		}
		out = append(out, [2]int{start, end})
		i = end
	}
	return out
}

// writeHunk writes one hunk: the @@ header, then its lines.
func writeHunk(sb *strings.Builder, h []step, a, b []string) {
	aStart, bStart := h[0].a, h[0].b
	aCount, bCount := 0, 0
	for _, s := range h {
		if s.kind != ins {
			aCount++
		}
		if s.kind != del {
			bCount++
		}
	}
	sb.WriteString("@@ -" + rangeText(aStart, aCount) + " +" + rangeText(bStart, bCount) + " @@\n")
	for _, s := range h {
		switch s.kind {
		case same:
			writeLine(sb, ' ', a[s.a])
		case del:
			writeLine(sb, '-', a[s.a])
		case ins:
			writeLine(sb, '+', b[s.b])
		}
	}
}

// rangeText formats a hunk range as diff does: "l,n" with 1-based l,
// "l" alone when n is 1, and for an empty range the line before it.
func rangeText(start, count int) string {
	switch count {
	case 0:
		return strconv.Itoa(start) + ",0"
	case 1:
		return strconv.Itoa(start + 1)
	}
	return strconv.Itoa(start+1) + "," + strconv.Itoa(count)
}

// writeLine writes one diff line, marking a missing final newline.
func writeLine(sb *strings.Builder, prefix byte, line string) {
	sb.WriteByte(prefix)
	sb.WriteString(line)
	if !strings.HasSuffix(line, "\n") {
		sb.WriteString("\n\\ No newline at end of file\n")
	}
}
