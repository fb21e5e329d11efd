package action

import (
	"strings"
)

// This file finds the block: it walks the output as
// markdown-ish text, skipping fenced code blocks, inline code spans and
// closed <think>/<thinking> regions, until the first eligible <ACTION> start
// tag, a cut-off start tag or a stray </ACTION>.

// maxSpanTicks is the longest backtick run that opens an inline code span;
// longer runs are literal. It bounds the search cost on hostile input.
const maxSpanTicks = 32

// parse runs the whole of Parse on an output with resolved options.
func parse(s string, o Options) (*Result, *perr) {
	lastNonWS := len(strings.TrimRight(s, " \t\r\n")) // rest after i is blank iff i >= lastNonWS
	var noClose [2]bool                               // a search for </think> / </thinking> already failed
	var spans spanMemo                                // failed code-span searches, per run length
	nextLT, nextTilde := -1, -1                       // memoised next '<' / '~' at or after i (len(s) = none)
	lineStart := true
	for i := 0; i < len(s); {
		if lineStart {
			lineStart = false
			if f, ok := fenceAt(s, i); ok {
				if f.end >= lastNonWS {
					return fenced(s, f, o)
				}
				i = f.end
				lineStart = true
				continue
			}
		}
		switch s[i] {
		case '\n':
			lineStart = true
			i++
		case '`':
			i = skipCodeSpan(s, i, &spans)
		case '<':
			if end, ok := skipThink(s, i, &noClose); ok {
				i = end
				continue
			}
			switch t := actionStartTag(s, i, len(s)); t.kind {
			case tagOpen:
				res, _, err := block(s, i, t.end, len(s), i, o)
				return res, err
			case tagNone:
				if _, ok := actionEndTag(s, i, len(s)); ok {
					return &Result{ResponseText: trim(s[:i]), Found: true}, failf(i,
						"remove the stray </ACTION>, or open the block with <ACTION> before the calls",
						"stray </ACTION> with no <ACTION> start tag before it")
				}
				i++
			default:
				return &Result{ResponseText: trim(s[:i]), Found: true}, t.err
			}
		default:
			// Jump to the next '<' when no fence or code span can start
			// before it (both need '`' or '~'); else go byte by byte. The
			// next '<' and '~' are remembered, so long stretches without
			// them are scanned once, not once per backtick.
			nextLT = nextIndex(s, i, '<', nextLT)
			nextTilde = nextIndex(s, i, '~', nextTilde)
			end := nextLT
			if seg := s[i:end]; strings.IndexByte(seg, '`') < 0 && nextTilde >= end {
				if end > i && s[end-1] == '\n' {
					lineStart = true
				}
				i = end
				continue
			}
			if bt := strings.IndexByte(s[i:end], '`'); bt >= 0 && nextTilde >= end {
				// Resume at the backtick, or at its line start when only up
				// to three spaces precede it there (a possible fence).
				bt += i
				ls := bt
				for ls > i && bt-ls < 3 && s[ls-1] == ' ' {
					ls--
				}
				if ls > i && s[ls-1] == '\n' { // i itself, if a line start, was checked already
					i, lineStart = ls, true
				} else {
					i = bt
				}
				continue
			}
			i++
			for i < len(s) && s[i] != '\n' && s[i] != '`' && s[i] != '<' {
				i++
			}
		}
	}
	return &Result{ResponseText: trim(s), Calls: []Call{}}, nil
}

// fenced handles a fence that only whitespace follows: it is unwrapped when
// it holds exactly one ACTION block with only whitespace around it.
func fenced(s string, f fence, o Options) (*Result, *perr) {
	p := f.content
	for p < f.contentEnd && isSpace(s[p]) {
		p++
	}
	plain := func() (*Result, *perr) { return &Result{ResponseText: trim(s), Calls: []Call{}}, nil }
	if p >= f.contentEnd || s[p] != '<' {
		return plain()
	}
	t := actionStartTag(s, p, f.contentEnd)
	switch t.kind {
	case tagNone:
		return plain()
	case tagOpen:
	case tagCut:
		if f.contentEnd != len(s) { // a cut-off tag inside a closed fence is an example, not a truncation
			return plain()
		}
		return &Result{ResponseText: trim(s[:f.open]), Found: true}, t.err
	default:
		return &Result{ResponseText: trim(s[:f.open]), Found: true}, t.err
	}
	res, end, err := block(s, p, t.end, f.contentEnd, f.open, o)
	if err == nil && strings.TrimLeft(s[end:f.contentEnd], " \t\r\n") != "" {
		return plain() // more than one block, or prose, inside the fence: an example
	}
	return res, err
}

// block parses the block whose start tag spans [start, body) and whose
// content may run to limit; textEnd is where responseText stops. It also
// returns the offset where the block ended.
func block(s string, start, body, limit, textEnd int, o Options) (*Result, int, *perr) {
	res := &Result{ResponseText: trim(s[:textEnd]), Found: true}
	realLimit := limit
	if limit-start > o.MaxBytes {
		limit = start + o.MaxBytes
	}
	p := &parser{s: s, o: o, start: start, limit: limit, cut: limit < realLimit}
	end, err := p.run(body)
	if err != nil {
		return res, end, err
	}
	res.Calls = p.calls
	res.Ignored = p.notes
	if t := strings.TrimLeft(s[end:realLimit], " \t\r\n"); t != "" {
		res.Ignored = append(res.Ignored, note(s, realLimit-len(t), "text after </ACTION> ignored", 0))
		res.IgnoredBlocks = countBlocks(s, end, realLimit)
	}
	return res, end, nil
}

func trim(s string) string { return strings.Trim(s, " \t\r\n") }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// fence is a fenced code block: the opening line starts at open, the content
// is [content, contentEnd), and the closing line (if any) ends at end.
type fence struct{ open, content, contentEnd, end int }

// fenceAt reports a fenced code block whose opening line starts at i:
// up to three spaces, then three or more '`' or '~' (an info string may
// follow; for backticks it may not contain a backtick). The fence closes at
// a line of the same character, at least as long, with only whitespace
// after it; an unclosed fence runs to the end of the output.
func fenceAt(s string, i int) (fence, bool) {
	j := i
	for j < len(s) && j-i < 3 && s[j] == ' ' {
		j++
	}
	if j >= len(s) || (s[j] != '`' && s[j] != '~') {
		return fence{}, false
	}
	ch := s[j]
	n := 0
	for j < len(s) && s[j] == ch {
		j++
		n++
	}
	if n < 3 {
		return fence{}, false
	}
	eol := strings.IndexByte(s[j:], '\n')
	if eol < 0 {
		eol = len(s)
	} else {
		eol += j
	}
	if ch == '`' && strings.IndexByte(s[j:eol], '`') >= 0 {
		return fence{}, false
	}
	f := fence{open: i, content: min(eol+1, len(s))}
	for k := f.content; k < len(s); {
		next := strings.IndexByte(s[k:], '\n')
		lineEnd := len(s)
		if next >= 0 {
			lineEnd = k + next
		}
		if closesFence(s[k:lineEnd], ch, n) {
			f.contentEnd = k
			f.end = min(lineEnd+1, len(s))
			return f, true
		}
		k = lineEnd + 1
	}
	f.contentEnd, f.end = len(s), len(s)
	return f, true
}

func closesFence(line string, ch byte, n int) bool {
	j := 0
	for j < len(line) && j < 3 && line[j] == ' ' {
		j++
	}
	m := 0
	for j < len(line) && line[j] == ch {
		j++
		m++
	}
	return m >= n && strings.Trim(line[j:], " \t\r") == ""
}

// nextIndex returns the offset of the first c in s at or after i, or
// len(s); memo is the previous answer (-1 = none), reused while it still
// lies at or after i.
func nextIndex(s string, i int, c byte, memo int) int {
	if memo >= i {
		return memo
	}
	if k := strings.IndexByte(s[i:], c); k >= 0 {
		return i + k
	}
	return len(s)
}

// spanMemo remembers, per opening run length, a stretch [from, to) known to
// hold no closing run of that length before a blank line or the end: a
// later opening inside it fails at once, so hostile runs of backticks cost
// linear time.
type spanMemo [maxSpanTicks + 1]struct{ from, to int }

// skipCodeSpan returns where scanning resumes after the backtick run at i:
// past the closing run of the same length when the span closes before a
// blank line, else just past the opening run (literal backticks).
func skipCodeSpan(s string, i int, memo *spanMemo) int {
	j := i
	for j < len(s) && s[j] == '`' {
		j++
	}
	n := j - i
	if n > maxSpanTicks {
		return j
	}
	if m := memo[n]; m.to > 0 && i >= m.from && j <= m.to {
		return j
	}
	memo[n].from = j
	for k := j; k < len(s); {
		switch s[k] {
		case '`':
			m := k
			for m < len(s) && s[m] == '`' {
				m++
			}
			if m-k == n {
				return m
			}
			k = m
		case '\n':
			b := k + 1
			for b < len(s) && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r') {
				b++
			}
			if b >= len(s) || s[b] == '\n' {
				memo[n].to = k
				return j // a blank line ends the paragraph: no span
			}
			k++
		default:
			k++
		}
	}
	memo[n].to = len(s)
	return j
}

// skipThink reports whether a <think> or <thinking> start tag sits at i and
// is closed later; it returns the offset after the closing tag.
// noClose memoises failed searches so hostile input stays linear.
func skipThink(s string, i int, noClose *[2]bool) (int, bool) {
	for k, name := range [2]string{"thinking", "think"} {
		j := i + 1 + len(name)
		if j > len(s) || !strings.EqualFold(s[i+1:j], name) {
			continue
		}
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		if j >= len(s) || s[j] != '>' {
			continue
		}
		if noClose[k] {
			return 0, false
		}
		for m := j + 1; m < len(s); m++ {
			if s[m] != '<' || m+2+len(name) > len(s) || s[m+1] != '/' || !strings.EqualFold(s[m+2:m+2+len(name)], name) {
				continue
			}
			e := m + 2 + len(name)
			for e < len(s) && isSpace(s[e]) {
				e++
			}
			if e < len(s) && s[e] == '>' {
				return e + 1, true
			}
		}
		noClose[k] = true
		return 0, false
	}
	return 0, false
}

// Kinds of what actionStartTag found.
const (
	tagNone   = iota // not an ACTION start tag
	tagOpen          // a complete start tag <ACTION ...>
	tagCut           // output ends inside the tag (rule 7)
	tagBroken        // self-closing or otherwise unusable (rule 8)
)

type startTag struct {
	kind int
	end  int // offset after '>' for tagOpen
	err  *perr
}

// actionStartTag classifies the '<' at i, looking no further than limit.
func actionStartTag(s string, i, limit int) startTag {
	const name = "action"
	rest := s[i+1 : limit]
	if limit == len(s) {
		// `<A`, `<ACTIO` ending the output (trailing whitespace allowed).
		if t := strings.TrimRight(rest, " \t\r\n"); len(t) > 0 && len(t) < len(name) && strings.EqualFold(t, name[:len(t)]) {
			return startTag{kind: tagCut, err: failf(i, hintFinish,
				"the output ends in a cut-off <ACTION start tag %q", s[i:i+1+len(t)])}
		}
	}
	if len(rest) < len(name) {
		return startTag{kind: tagNone}
	}
	if !strings.EqualFold(rest[:len(name)], name) {
		return startTag{kind: tagNone}
	}
	j := i + 1 + len(name)
	if j < limit {
		c := s[j]
		if !isSpace(c) && c != '>' && c != '/' {
			return startTag{kind: tagNone} // <ACTIONS>, <action_plan>
		}
	}
	var quote byte
	for ; j < limit; j++ {
		c := s[j]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			if s[j-1] == '/' {
				return startTag{kind: tagBroken, err: failf(i, hintShape,
					"<ACTION/> is an empty block: it holds no tool call")}
			}
			return startTag{kind: tagOpen, end: j + 1}
		case c == '<':
			return startTag{kind: tagBroken, err: failf(i, "close the start tag with '>': <ACTION>",
				"the <ACTION start tag is not closed with '>' before the next '<'")}
		}
	}
	if limit < len(s) {
		return startTag{kind: tagBroken, err: failf(i, "close the start tag with '>': <ACTION>",
			"the <ACTION start tag is not closed with '>'")}
	}
	return startTag{kind: tagCut, err: failf(i, hintFinish,
		"the output ends inside the <ACTION start tag (no '>')")}
}

// actionEndTag reports an </ACTION> end tag (any case, whitespace before
// '>') at i and the offset after it.
func actionEndTag(s string, i, limit int) (int, bool) {
	const name = "</action"
	if limit-i < len(name)+1 || !strings.EqualFold(s[i:i+len(name)], name) {
		return 0, false
	}
	j := i + len(name)
	for j < limit && isSpace(s[j]) {
		j++
	}
	if j < limit && s[j] == '>' {
		return j + 1, true
	}
	return 0, false
}
