package action

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is the tokenizer for the inside of a block (protocol rules 5,
// 6 and 8–17): strict XML 1.0 element content with the two repairs of
// rule 9, building values as each element closes.

// Roles of an open element.
const (
	roleAction = iota // the ACTION element itself
	roleTool          // form A tool element
	roleParam         // a value element below a tool, parameter or input
	roleToolID        // form B <tool_id>
	roleInputs        // form B <inputs>
	roleInput         // form B <input name="...">
)

// Forms of a block (rule 13).
const (
	formUnknown = iota
	formA
	formB
)

// maxNotes bounds Result.Ignored on hostile input.
const maxNotes = 8

type attr struct {
	name, value string
	pos         int
}

type kid struct {
	name string
	val  any
	pos  int
}

// frame is an open element.
type frame struct {
	name      string
	key       string // the name attribute of a form B <input>
	pos       int    // offset of '<'
	inner     int    // offset after the start tag
	role      int
	attrs     []attr
	kidStart  int // this element's children start at parser.kids[kidStart]
	textStart int // where this element's text starts in parser.buf
	lo, hi    int // significant text in parser.buf; lo < 0 when none
	srcLo     int // offset in the output of buf[lo] when it was copied verbatim, else -1
	exactTo   int // buf[lo:exactTo] is the verbatim copy of output[srcLo:]
	noteMark  int // len(parser.notes) when the element opened
}

type parser struct {
	s      string
	o      Options
	start  int  // offset of the <ACTION start tag
	limit  int  // the block may not extend past this offset
	cut    bool // limit is MaxBytes, not the end of the output
	calls  []Call
	notes  []string
	stack  []frame
	kids   []kid  // children of all open elements, innermost last
	buf    []byte // text of all open elements, innermost last
	form   int
	afterB bool // the previous call element was a form B <tool_id>
	skip   bool // inside a run of ignored text directly under ACTION
}

// run parses from body, just after the ACTION start tag, and returns the
// offset where the block ends: after </ACTION>, or the limit.
func (p *parser) run(body int) (int, *perr) {
	s, lim := p.s, p.limit
	p.stack = make([]frame, 1, 8)
	p.kids = make([]kid, 0, 16)
	p.buf = make([]byte, 0, 512)
	p.stack[0] = frame{role: roleAction, lo: -1, pos: p.start}
	i := body
	var err *perr
	for i < lim && err == nil {
		switch s[i] {
		case '<':
			if i+1 >= lim { // a '<' ending the output is a cut-off tag (rule 6)
				return i, p.eof(i, "a tag")
			}
			switch n := s[i+1]; {
			case n == '/':
				var done bool
				i, done, err = p.endTag(i)
				if done && err == nil {
					return i, p.finish()
				}
			case n == '!':
				i, err = p.bang(i)
			case n == '?':
				err = failf(i, "remove it; only elements, text, CDATA and comments may appear in a block",
					"processing instructions (<?...?>) are not allowed in an ACTION block")
			case p.nameStart(i + 1):
				i, err = p.startTag(i)
			default:
				err = p.literalLT(i)
				i++
			}
		case '&':
			i, err = p.ref(i)
		default:
			i, err = p.chars(i)
		}
	}
	if err != nil {
		return i, err
	}
	if p.cut {
		return i, p.eof(i, "")
	}
	if len(p.stack) > 1 {
		f := &p.stack[len(p.stack)-1]
		return i, failf(f.pos, "close <"+f.name+"> and every element around it, then end the block with </ACTION>; "+hintCDATA,
			"the output ends before element <%s> is closed", f.name)
	}
	return lim, p.finish()
}

// finish checks the block as a whole once it has ended.
func (p *parser) finish() *perr {
	if len(p.calls) == 0 {
		return failf(p.start, hintShape, "the ACTION block holds no tool call")
	}
	return nil
}

// eof reports input that stops inside a construct: the size limit when the
// block was cut at MaxBytes, else a truncated block (rule 6).
func (p *parser) eof(pos int, what string) *perr {
	if p.cut {
		return failf(p.start, "split the work into smaller calls, or pass large data by reference (a path or URL)",
			"the ACTION block is larger than the limit of %d bytes", p.o.MaxBytes)
	}
	return failf(pos, hintCloseAll, "the output ends inside %s", what)
}

func (p *parser) top() *frame { return &p.stack[len(p.stack)-1] }

// text adds character data at pos to the open element. Protected text
// (CDATA, character references) is significant even when it is whitespace
// and is never trimmed. src is the offset of seg in the output when seg is
// a verbatim slice of it, else -1; it lets a leaf share the output's bytes.
func (p *parser) text(pos int, seg string, protected bool, src int) *perr {
	f := p.top()
	first, last := 0, len(seg)
	if !protected {
		for first < last && isSpace(seg[first]) {
			first++
		}
		for last > first && isSpace(seg[last-1]) {
			last--
		}
		if first == last {
			if f.role == roleParam || f.role == roleInput || f.role == roleToolID {
				p.appendText(f, seg, src)
			}
			return nil
		}
	}
	switch f.role {
	case roleAction:
		if !p.skip && len(p.notes) < maxNotes {
			p.notes = append(p.notes, note(p.s, pos+first, "text directly under <ACTION> ignored", '<'))
		}
		p.skip = true
		return nil
	case roleTool, roleInputs:
		hint := fmt.Sprintf("put each value in a parameter element, e.g. <%s><text>...</text></%s>", f.name, f.name)
		if f.role == roleInputs {
			hint = "put each value in <input name=\"...\">value</input>"
		}
		return failf(pos+first, hint, "text directly inside <%s>: it may hold only parameter elements", f.name)
	}
	n := len(p.buf)
	p.appendText(f, seg, src)
	if f.lo < 0 {
		f.lo = n + first
		f.srcLo = -1
		if src >= 0 {
			f.srcLo, f.exactTo = src+first, n+len(seg)
		}
	}
	f.hi = n + last
	return nil
}

// appendText appends seg to the text buffer and extends the stretch of it
// that is a verbatim copy of the output (see leaf).
func (p *parser) appendText(f *frame, seg string, src int) {
	n := len(p.buf)
	p.buf = append(p.buf, seg...)
	if f.lo >= 0 && f.srcLo >= 0 && src >= 0 && n == f.exactTo && src-f.srcLo == n-f.lo {
		f.exactTo = n + len(seg)
	}
}

// leaf returns the element's trimmed text: a slice of the output when the
// text is a verbatim stretch of it (no references decoded, no newlines
// normalised, no CDATA or comment markup inside), else a copy.
func (p *parser) leaf(f *frame) string {
	switch {
	case f.lo < 0:
		return ""
	case f.srcLo >= 0 && f.hi <= f.exactTo:
		return p.s[f.srcLo : f.srcLo+f.hi-f.lo]
	}
	return string(p.buf[f.lo:f.hi])
}

// chars consumes a run of character data up to the next '<' or '&',
// normalising CRLF and CR to LF and rejecting characters XML forbids.
func (p *parser) chars(i int) (int, *perr) {
	s, lim := p.s, p.limit
	start := i
	for i < lim {
		c := s[i]
		switch {
		case c == '<' || c == '&':
			return i, p.text(start, s[start:i], false, start)
		case c == '\r':
			if err := p.text(start, s[start:i], false, start); err != nil {
				return i, err
			}
			if err := p.text(i, "\n", false, -1); err != nil {
				return i, err
			}
			i++
			if i < lim && s[i] == '\n' {
				i++
			}
			start = i
		case c == ']':
			if strings.HasPrefix(s[i:lim], "]]>") {
				return i, failf(i, "write ']]&gt;' or put the value in <![CDATA[...]]> (split a literal ']]>' across two CDATA sections)",
					"']]>' may not appear in text outside CDATA")
			}
			i++
		case c >= utf8.RuneSelf:
			n, err := p.validRune(i)
			if err != nil {
				return i, err
			}
			i += n
		case c < 0x20 && c != '\t' && c != '\n':
			return i, badChar(i, rune(c))
		default:
			i++
		}
	}
	return i, p.text(start, s[start:i], false, start)
}

// validRune checks the multi-byte character at i and returns its size.
func (p *parser) validRune(i int) (int, *perr) {
	r, n := utf8.DecodeRuneInString(p.s[i:p.limit])
	if r == utf8.RuneError && n <= 1 {
		if p.cut && i+utf8.UTFMax > p.limit {
			return 0, p.eof(i, "")
		}
		return 0, failf(i, "send the block as UTF-8 text", "invalid UTF-8 byte 0x%02X", p.s[i])
	}
	if r == 0xFFFE || r == 0xFFFF {
		return 0, badChar(i, r)
	}
	return n, nil
}

func badChar(pos int, r rune) *perr {
	return failf(pos, "remove it; XML 1.0 allows no control characters other than tab, LF and CR",
		"character U+%04X is not allowed in XML", r)
}

// literalLT handles a '<' that starts no markup (rule 9): it is a literal
// '<'. Directly under ACTION, a '<' before a digit, '-' or '.' that looks
// like a tag is a tool ID that is not an XML name, so it fails with the
// form B hint instead of being ignored.
func (p *parser) literalLT(i int) *perr {
	if p.top().role == roleAction {
		if name, ok := tagLike(p.s[i+1 : p.limit]); ok {
			return failf(i, hintFormB, "<%s> is not a valid XML element name", name)
		}
	}
	return p.text(i, "<", false, i)
}

// tagLike reports whether rest (after '<') starts with something written as
// a tag: a digit, '-' or '.', more name characters, then '>', '/>' or
// attributes closed by '>' on the same line.
func tagLike(rest string) (string, bool) {
	if rest == "" || !(rest[0] >= '0' && rest[0] <= '9' || rest[0] == '-' || rest[0] == '.') {
		return "", false
	}
	j := 0
	for j < len(rest) {
		r, n := utf8.DecodeRuneInString(rest[j:])
		if !isNameChar(r) {
			break
		}
		j += n
	}
	name := rest[:j]
	tail := rest[j:]
	switch {
	case strings.HasPrefix(tail, ">"), strings.HasPrefix(tail, "/>"):
		return name, true
	case tail != "" && isSpace(tail[0]):
		eol := strings.IndexAny(tail, "\n<")
		if eol < 0 {
			eol = len(tail)
		}
		return name, strings.IndexByte(tail[:eol], '>') >= 0
	}
	return "", false
}

// ref handles '&' at i (rules 9 and 10).
func (p *parser) ref(i int) (int, *perr) {
	r := parseRef(p.s, i, p.limit)
	switch r.kind {
	case refLiteral:
		return i + 1, p.text(i, "&", false, i)
	case refUnknown:
		return i + r.n, p.text(i, p.s[i:i+r.n], false, i)
	case refBad:
		return i, failf(i, "remove the reference; XML 1.0 cannot carry that character",
			"character reference %s names a character XML does not allow", p.s[i:i+r.n])
	}
	return i + r.n, p.text(i, r.val, true, -1)
}

// Kinds of reference.
const (
	refLiteral = iota // '&' starting no complete reference: a literal '&'
	refDecoded        // predefined entity or numeric reference
	refUnknown        // complete but unknown named reference: kept literally
	refBad            // numeric reference to a character XML forbids
)

type reference struct {
	kind int
	n    int // length in bytes
	val  string
}

var predefined = map[string]string{"lt": "<", "gt": ">", "amp": "&", "apos": "'", "quot": "\""}

// parseRef classifies the '&' at s[i].
func parseRef(s string, i, lim int) reference {
	j := i + 1
	if j >= lim {
		return reference{kind: refLiteral}
	}
	if s[j] == '#' {
		j++
		base := 10
		if j < lim && s[j] == 'x' {
			base = 16
			j++
		}
		ds := j
		var v int64
		for j < lim {
			d := digitVal(s[j], base)
			if d < 0 {
				break
			}
			if v <= 0x10FFFF {
				v = v*int64(base) + int64(d)
			}
			j++
		}
		if j == ds || j >= lim || s[j] != ';' {
			return reference{kind: refLiteral}
		}
		n := j + 1 - i
		if !xmlChar(v) {
			return reference{kind: refBad, n: n}
		}
		return reference{kind: refDecoded, n: n, val: string(rune(v))}
	}
	if !nameStartIn(s, j, lim) {
		return reference{kind: refLiteral}
	}
	_, e := scanName(s, j, lim)
	if e >= lim || s[e] != ';' {
		return reference{kind: refLiteral}
	}
	if v, ok := predefined[s[j:e]]; ok {
		return reference{kind: refDecoded, n: e + 1 - i, val: v}
	}
	return reference{kind: refUnknown, n: e + 1 - i}
}

func digitVal(c byte, base int) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case base == 16 && c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case base == 16 && c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// xmlChar reports whether v is a Char of XML 1.0.
func xmlChar(v int64) bool {
	switch {
	case v == 0x9 || v == 0xA || v == 0xD:
		return true
	case v < 0x20:
		return false
	case v >= 0xD800 && v <= 0xDFFF, v == 0xFFFE, v == 0xFFFF:
		return false
	}
	return v <= 0x10FFFF
}

// bang handles "<!": a comment, a CDATA section or a forbidden declaration.
func (p *parser) bang(i int) (int, *perr) {
	s, lim := p.s, p.limit
	rest := s[i:lim]
	switch {
	case strings.HasPrefix(rest, "<!--"):
		k := strings.Index(rest[4:], "--")
		if k < 0 {
			return i, p.eof(i, "a comment (close it with -->)")
		}
		end := i + 4 + k
		if end+2 >= lim {
			return i, p.eof(i, "a comment (close it with -->)")
		}
		if s[end+2] != '>' {
			return i, failf(end, "remove the '--' or end the comment with -->", "'--' is not allowed inside a comment")
		}
		if err := p.validText(i+4, end); err != nil {
			return i, err
		}
		return end + 3, nil
	case strings.HasPrefix(rest, "<![CDATA["):
		k := strings.Index(rest[9:], "]]>")
		if k < 0 {
			return i, p.eof(i, "a CDATA section (close it with ]]>)")
		}
		from, to := i+9, i+9+k
		if err := p.validText(from, to); err != nil {
			return i, err
		}
		v, src := s[from:to], from
		if strings.IndexByte(v, '\r') >= 0 {
			v, src = normalizeNewlines(v), -1
		}
		return to + 3, p.text(i, v, true, src)
	case len(rest) < 9 && (strings.HasPrefix("<!--", rest) || strings.HasPrefix("<![CDATA[", rest)):
		return i, p.eof(i, "a comment or CDATA section")
	}
	word := rest[2:]
	if k := strings.IndexAny(word, " \t\r\n>[<"); k >= 0 {
		word = word[:k]
	}
	if len(word) > 20 {
		word = word[:20]
	}
	return i, failf(i, "remove it; entity and document type declarations are never processed, use plain text or CDATA instead",
		"declaration <!%s is not allowed in an ACTION block", word)
}

// validText rejects characters XML forbids in s[from:to].
func (p *parser) validText(from, to int) *perr {
	s := p.s
	for i := from; i < to; {
		c := s[i]
		switch {
		case c >= utf8.RuneSelf:
			n, err := p.validRune(i)
			if err != nil {
				return err
			}
			i += n
		case c < 0x20 && c != '\t' && c != '\n' && c != '\r':
			return badChar(i, rune(c))
		default:
			i++
		}
	}
	return nil
}

// normalizeNewlines turns CRLF and lone CR into LF.
func normalizeNewlines(v string) string {
	v = strings.ReplaceAll(v, "\r\n", "\n")
	return strings.ReplaceAll(v, "\r", "\n")
}

// note formats an entry of Result.Ignored with an excerpt of s at pos that
// stops at a newline or at the byte stop.
func note(s string, pos int, what string, stop byte) string {
	line, col := position(s, pos)
	ex := s[pos:]
	if k := strings.IndexByte(ex, '\n'); k >= 0 {
		ex = ex[:k]
	}
	if k := strings.IndexByte(ex, stop); k >= 0 {
		ex = ex[:k]
	}
	ex = strings.TrimRight(ex, " \t\r")
	if len(ex) > 60 {
		k := 60
		for k > 0 && !utf8.RuneStart(ex[k]) {
			k--
		}
		ex = ex[:k] + "…"
	}
	return fmt.Sprintf("line %d, column %d: %s: %s", line, col, what, strconv.Quote(ex))
}
