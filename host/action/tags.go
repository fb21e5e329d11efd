package action

import (
	"strings"
	"unicode/utf8"
)

// This file handles start and end tags, the call forms (rules 12–14) and
// the value rules (rules 15–16).

// startTag parses the start tag at i (s[i+1] starts a name).
func (p *parser) startTag(i int) (int, *perr) {
	s, lim := p.s, p.limit
	name, j := scanName(s, i+1, lim)
	if strings.EqualFold(name, "action") {
		return i, failf(i, "close the first block with </ACTION> before starting another, or send one block with several calls",
			"an ACTION block may not contain another <%s>", name)
	}
	var attrs []attr
	var seen map[string]bool // attribute names, once there are many
	for {
		ws := j
		for j < lim && isSpace(s[j]) {
			j++
		}
		if j >= lim {
			return i, p.eof(i, "the start tag <"+name)
		}
		switch c := s[j]; {
		case c == '>':
			return j + 1, p.open(name, i, j+1, attrs, false)
		case c == '/':
			if j+1 >= lim {
				return i, p.eof(i, "the start tag <"+name)
			}
			if s[j+1] != '>' {
				return i, failf(j, "write <"+name+"/> or <"+name+">", "'/' must be followed by '>' in the start tag <%s", name)
			}
			return j + 2, p.open(name, i, j+2, attrs, true)
		case ws == j:
			return i, failf(j, "write <name attr=\"value\">, with a space before each attribute",
				"unexpected %q in the start tag <%s", c, name)
		case !p.nameStart(j):
			return i, failf(j, "write <name attr=\"value\">; "+hintCDATA,
				"unexpected %q in the start tag <%s", c, name)
		}
		a := attr{pos: j}
		a.name, j = scanName(s, j, lim)
		for j < lim && isSpace(s[j]) {
			j++
		}
		if j >= lim {
			return i, p.eof(i, "the start tag <"+name)
		}
		if s[j] != '=' {
			return i, failf(a.pos, "write "+a.name+"=\"value\"", "attribute %s of <%s> has no value", a.name, name)
		}
		j++
		for j < lim && isSpace(s[j]) {
			j++
		}
		if j >= lim {
			return i, p.eof(i, "the start tag <"+name)
		}
		if s[j] != '"' && s[j] != '\'' {
			return i, failf(j, "write "+a.name+"=\"value\"", "the value of attribute %s of <%s> is not quoted", a.name, name)
		}
		var err *perr
		a.value, j, err = p.attrValue(j)
		if err != nil {
			return i, err
		}
		if !qname(a.name) {
			return i, failf(a.pos, "use at most one ':' in a name, not at its start or end", "%s is not a valid attribute name", a.name)
		}
		dup := seen[a.name]
		if seen == nil {
			for _, b := range attrs {
				dup = dup || b.name == a.name
			}
		}
		if dup {
			return i, failf(a.pos, "give each attribute once", "attribute %s appears twice in <%s>", a.name, name)
		}
		attrs = append(attrs, a)
		if len(attrs) == 16 {
			seen = make(map[string]bool)
			for _, b := range attrs {
				seen[b.name] = true
			}
		} else if seen != nil {
			seen[a.name] = true
		}
	}
}

// attrValue reads the quoted attribute value at j (rules 9–10 apply; tab,
// CR and LF become spaces as XML 1.0 requires; references are decoded).
func (p *parser) attrValue(j int) (string, int, *perr) {
	s, lim := p.s, p.limit
	q := s[j]
	j++
	start := j
	var b []byte
	for j < lim {
		c := s[j]
		switch {
		case c == q:
			if b == nil {
				return s[start:j], j + 1, nil
			}
			return string(append(b, s[start:j]...)), j + 1, nil
		case c == '&':
			r := parseRef(s, j, lim)
			switch r.kind {
			case refLiteral:
				j++
				continue
			case refUnknown:
				j += r.n
				continue
			case refBad:
				return "", j, failf(j, "remove the reference; XML 1.0 cannot carry that character",
					"character reference %s names a character XML does not allow", s[j:j+r.n])
			}
			b = append(b, s[start:j]...)
			b = append(b, r.val...)
			j += r.n
			start = j
		case c == '<':
			if j+1 < lim && (s[j+1] == '/' || s[j+1] == '!' || s[j+1] == '?' || p.nameStart(j+1)) {
				return "", j, failf(j, "write &lt; for '<' in an attribute value, or use a child element with CDATA",
					"'<' starting markup inside an attribute value")
			}
			j++
		case c == '\t' || c == '\n' || c == '\r':
			b = append(b, s[start:j]...)
			b = append(b, ' ')
			if c == '\r' && j+1 < lim && s[j+1] == '\n' {
				j++
			}
			j++
			start = j
		case c >= utf8.RuneSelf:
			n, err := p.validRune(j)
			if err != nil {
				return "", j, err
			}
			j += n
		case c < 0x20:
			return "", j, badChar(j, rune(c))
		default:
			j++
		}
	}
	return "", j, p.eof(start-1, "an attribute value (close it with the same quote)")
}

// open pushes an element whose start tag spans [pos, inner); an empty
// element (<x/>) is closed at once.
func (p *parser) open(name string, pos, inner int, attrs []attr, empty bool) *perr {
	depth := len(p.stack)
	if depth > p.o.MaxDepth {
		return failf(pos, "flatten the value, or pass it as JSON text in CDATA",
			"elements are nested deeper than the limit of %d levels", p.o.MaxDepth)
	}
	parent := p.top()
	f := frame{name: name, pos: pos, inner: inner, role: roleParam, textStart: len(p.buf), kidStart: len(p.kids), lo: -1, noteMark: len(p.notes)}
	if !qname(name) {
		if parent.role == roleAction {
			return failf(pos, hintFormB, "<%s> is not a valid XML element name", name)
		}
		return failf(pos, "use at most one ':' in a parameter name, not at its start or end", "<%s> is not a valid element name", name)
	}
	switch parent.role {
	case roleAction:
		p.skip = false
		if err := p.openCall(&f); err != nil {
			return err
		}
	case roleToolID:
		return failf(pos, "write <tool_id>namespace:name</tool_id>", "<tool_id> holds only the tool ID text, not elements such as <%s>", name)
	case roleInputs:
		if name != "input" {
			return failf(pos, "write <inputs><input name=\"param\">value</input></inputs>", "<inputs> may hold only <input> elements, not <%s>", name)
		}
		f.role = roleInput
		k := -1
		for n, a := range attrs {
			if a.name == "name" {
				k = n
			}
		}
		if k < 0 || attrs[k].value == "" {
			return failf(pos, "write <input name=\"param\">value</input>", "<input> needs a non-empty name attribute")
		}
		f.key = attrs[k].value
		attrs = append(attrs[:k:k], attrs[k+1:]...)
	}
	f.attrs = dropXMLNS(attrs)
	p.stack = append(p.stack, f)
	if empty {
		return p.close(inner)
	}
	return nil
}

// openCall sets the role of a child of ACTION: a form A tool element, or a
// form B <tool_id> / <inputs> (rules 12 and 13).
func (p *parser) openCall(f *frame) *perr {
	mix := "use one form per block: form A <ns:tool><param>v</param></ns:tool>, or form B <tool_id>ns:tool</tool_id><inputs>...</inputs>"
	switch f.name {
	case "tool_id":
		if p.form == formA {
			return failf(f.pos, mix, "<tool_id> (form B) mixed with form A calls in one block")
		}
		p.form = formB
		f.role = roleToolID
		p.afterB = true
		return p.countCall(f.pos)
	case "inputs":
		switch {
		case p.form == formA:
			return failf(f.pos, mix, "<inputs> (form B) mixed with form A calls in one block")
		case p.form == formUnknown:
			return failf(f.pos, "write <tool_id>ns:tool</tool_id> before its <inputs>", "<inputs> comes before any <tool_id>")
		case !p.afterB:
			return failf(f.pos, "give each <tool_id> at most one <inputs>", "<inputs> does not follow a <tool_id>")
		}
		f.role = roleInputs
		p.afterB = false
		return nil
	}
	if p.form == formB {
		return failf(f.pos, mix, "<%s> (form A) mixed with form B calls in one block", f.name)
	}
	p.form = formA
	f.role = roleTool
	return p.countCall(f.pos)
}

func (p *parser) countCall(pos int) *perr {
	if len(p.calls) >= p.o.MaxCalls {
		return failf(pos, "send the remaining calls in a later turn",
			"too many calls: a block may hold at most %d", p.o.MaxCalls)
	}
	return nil
}

// dropXMLNS removes namespace declarations, which the protocol ignores.
func dropXMLNS(attrs []attr) []attr {
	out := attrs[:0]
	for _, a := range attrs {
		if a.name == "xmlns" || strings.HasPrefix(a.name, "xmlns:") {
			continue
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// endTag parses the end tag at i. done reports </ACTION>, the end of the
// block (rule 5).
func (p *parser) endTag(i int) (next int, done bool, err *perr) {
	s, lim := p.s, p.limit
	j := i + 2
	if j >= lim {
		return i, false, p.eof(i, "an end tag")
	}
	if !p.nameStart(j) {
		return i, false, failf(i, "write </name>; "+hintCDATA, "malformed end tag")
	}
	name, j := scanName(s, j, lim)
	for j < lim && isSpace(s[j]) {
		j++
	}
	if j >= lim {
		return i, false, p.eof(i, "the end tag </"+name)
	}
	if s[j] != '>' {
		return i, false, failf(j, "write </"+name+">", "the end tag </%s must end with '>'", name)
	}
	if strings.EqualFold(name, "action") {
		if len(p.stack) > 1 {
			f := p.top()
			line, col := position(s, f.pos)
			hint := cdataHint(f.name)
			if f.role != roleParam && f.role != roleInput {
				hint = "close <" + f.name + "> with </" + f.name + "> before </ACTION>"
			}
			return i, false, failf(i, hint,
				"element <%s> opened at line %d, column %d is not closed before </%s>", f.name, line, col, name)
		}
		return j + 1, true, nil
	}
	if len(p.stack) == 1 {
		return i, false, failf(i, "remove it, or add the matching start tag <"+name+">", "end tag </%s> has no matching start tag", name)
	}
	f := p.top()
	if f.name != name {
		line, col := position(s, f.pos)
		hint := cdataHint(f.name)
		if strings.EqualFold(f.name, name) {
			hint = "element names are case-sensitive: close <" + f.name + "> with </" + f.name + ">"
		}
		return i, false, failf(i, hint,
			"element <%s> opened at line %d, column %d is not closed: found </%s>", f.name, line, col, name)
	}
	return j + 1, false, p.close(i)
}

// close pops the top element, whose content ends at end, and hands its
// value to its parent.
func (p *parser) close(end int) *perr {
	f := &p.stack[len(p.stack)-1]
	k, keep, err := p.closeTop(f, end)
	p.buf = p.buf[:f.textStart]
	p.kids = p.kids[:f.kidStart]
	*f = frame{} // drop references held by the popped frame
	p.stack = p.stack[:len(p.stack)-1]
	if keep {
		p.kids = append(p.kids, k)
	}
	return err
}

// closeTop builds the value of element f, the top of the stack. A call goes
// to p.calls; a value is returned as a kid for the parent (keep true).
func (p *parser) closeTop(f *frame, end int) (k kid, keep bool, err *perr) {
	kids := p.kids[f.kidStart:]
	switch f.role {
	case roleTool:
		args, err := p.object(f.attrs, kids, f.name)
		if err != nil {
			return k, false, err
		}
		p.calls = append(p.calls, Call{Tool: f.name, Args: args})
	case roleToolID:
		id := p.leaf(f)
		if id == "" {
			return k, false, failf(f.pos, "write <tool_id>namespace:name</tool_id>", "empty <tool_id>")
		}
		p.notesAttrs(f)
		p.calls = append(p.calls, Call{Tool: id, Args: map[string]any{}})
	case roleInputs:
		args, err := p.object(f.attrs, kids, f.name)
		if err != nil {
			return k, false, err
		}
		p.calls[len(p.calls)-1].Args = args
	default:
		v, err := p.value(f, kids, end)
		if err != nil {
			return k, false, err
		}
		name := f.name
		if f.role == roleInput {
			name = f.key
		}
		return kid{name: name, val: v, pos: f.pos}, true, nil
	}
	return k, false, nil
}

func (p *parser) notesAttrs(f *frame) {
	if len(f.attrs) > 0 && len(p.notes) < maxNotes {
		p.notes = append(p.notes, note(p.s, f.attrs[0].pos, "attributes of <"+f.name+"> ignored because it holds text", '>'))
	}
}

// value applies rules 15 and 16 to a closed parameter element whose
// content ends at end.
func (p *parser) value(f *frame, kids []kid, end int) (any, *perr) {
	hasText := f.lo >= 0
	switch {
	case hasText && len(kids) > 0:
		p.notes = p.notes[:f.noteMark] // the children's values are discarded with their notes
		p.notesAttrs(f)
		return rawRef{from: f.inner, to: end}, nil
	case hasText:
		p.notesAttrs(f)
		return p.leaf(f), nil
	case len(kids) > 0:
		for _, k := range kids {
			if k.name != "item" {
				return p.object(f.attrs, kids, f.name)
			}
		}
		if len(f.attrs) > 0 {
			return nil, failf(f.attrs[0].pos, "drop the attributes, or wrap the list: <"+f.name+"><items>…</items></"+f.name+">",
				"<%s> holds an <item> list and attributes; a list cannot carry attributes", f.name)
		}
		list := make([]any, len(kids))
		for n, k := range kids {
			list[n] = p.materialize(k.val)
		}
		return list, nil
	case len(f.attrs) > 0:
		return p.object(f.attrs, nil, f.name)
	}
	return "", nil
}

// rawRef is the value of an element with both text and child elements:
// its inner markup s[from:to], made a string only when a parent keeps it,
// so nested mixed content costs no more than its size.
type rawRef struct{ from, to int }

// materialize turns a rawRef into its string value (rule 16).
func (p *parser) materialize(v any) any {
	if r, ok := v.(rawRef); ok {
		return trim(normalizeNewlines(p.s[r.from:r.to]))
	}
	return v
}

// object builds an object from attributes (string fields) and child
// elements; a child name that repeats becomes a list in order.
func (p *parser) object(attrs []attr, kids []kid, owner string) (map[string]any, *perr) {
	m := make(map[string]any, len(attrs)+len(kids))
	for _, a := range attrs {
		m[a.name] = a.value
	}
	var multi map[string][]any // repeated names, boxed into m once at the end
	var isAttr map[string]bool
	for _, k := range kids {
		v := p.materialize(k.val)
		if list, ok := multi[k.name]; ok {
			multi[k.name] = append(list, v)
			continue
		}
		old, ok := m[k.name]
		if !ok {
			m[k.name] = v
			continue
		}
		if isAttr == nil && len(attrs) > 0 {
			isAttr = make(map[string]bool, len(attrs))
			for _, a := range attrs {
				isAttr[a.name] = true
			}
		}
		if isAttr[k.name] {
			return nil, failf(k.pos, "give "+k.name+" either as an attribute or as an element, not both",
				"%s is given both as an attribute and as an element of <%s>", k.name, owner)
		}
		if multi == nil {
			multi = map[string][]any{}
		}
		multi[k.name] = []any{old, v}
	}
	for name, list := range multi {
		m[name] = list
	}
	return m, nil
}

// nameStart reports whether a NameStartChar starts at i.
func (p *parser) nameStart(i int) bool { return nameStartIn(p.s, i, p.limit) }

func nameStartIn(s string, i, lim int) bool {
	if i >= lim {
		return false
	}
	c := s[i]
	if c < utf8.RuneSelf {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':'
	}
	r, _ := utf8.DecodeRuneInString(s[i:lim])
	return isNameStartRune(r)
}

// scanName returns the XML Name starting at i (which must start one) and
// the offset after it.
func scanName(s string, i, lim int) (string, int) {
	j := i
	for j < lim {
		c := s[j]
		if c < utf8.RuneSelf {
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == ':' || c == '-' || c == '.' {
				j++
				continue
			}
			break
		}
		r, n := utf8.DecodeRuneInString(s[j:lim])
		if r == utf8.RuneError && n <= 1 || !isNameChar(r) {
			break
		}
		j += n
	}
	return s[i:j], j
}

func isNameStartRune(r rune) bool {
	switch {
	case r < utf8.RuneSelf:
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || r == ':'
	case r >= 0xC0 && r <= 0xD6, r >= 0xD8 && r <= 0xF6, r >= 0xF8 && r <= 0x2FF,
		r >= 0x370 && r <= 0x37D, r >= 0x37F && r <= 0x1FFF, r >= 0x200C && r <= 0x200D,
		r >= 0x2070 && r <= 0x218F, r >= 0x2C00 && r <= 0x2FEF, r >= 0x3001 && r <= 0xD7FF,
		r >= 0xF900 && r <= 0xFDCF, r >= 0xFDF0 && r <= 0xFFFD, r >= 0x10000 && r <= 0xEFFFF:
		return true
	}
	return false
}

func isNameChar(r rune) bool {
	return isNameStartRune(r) || r == '-' || r == '.' || r >= '0' && r <= '9' || r == 0xB7 ||
		r >= 0x300 && r <= 0x36F || r >= 0x203F && r <= 0x2040
}

// qname reports whether an XML name is also a qualified name of Namespaces
// in XML: at most one ':', not first or last.
func qname(name string) bool {
	k := strings.IndexByte(name, ':')
	if k < 0 {
		return true
	}
	return k > 0 && k < len(name)-1 && strings.IndexByte(name[k+1:], ':') < 0 && nameStartIn(name, k+1, len(name))
}

// cdataHint is the fix for an element that was probably meant as text,
// such as the <String> of List<String>.
func cdataHint(name string) string {
	return "if <" + name + "> is part of a value, not a tag, wrap that value in <![CDATA[...]]>; otherwise close it with </" + name + ">"
}
