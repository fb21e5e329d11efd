package action

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Render writes calls as one canonical ACTION block: form A with two-space
// indentation and sorted keys, or form B for every call when some tool ID
// or top-level argument name cannot be an element name. Strings that hold
// '<', '&', '>', CR or leading/trailing whitespace are written as CDATA
// (CR as &#13;); an object of strings only is written as attributes; a
// list as <item> elements. Parse(Render(calls)) gives calls back for every
// value Parse itself produces.
//
// Render is lossy only for values Parse never produces: an empty list or
// object renders as "", a nested key that is not an XML name (or is
// "action") has its invalid characters replaced by '_', other scalars
// (numbers, booleans, nil) are written as their JSON text, and characters
// XML 1.0 cannot carry become U+FFFD.
func Render(calls []Call) string {
	var b strings.Builder
	b.WriteString("<ACTION>\n")
	formB := false
	for _, c := range calls {
		if !callTag(c.Tool) {
			formB = true
		}
		for k := range c.Args {
			if !elemTag(k) {
				formB = true
			}
		}
	}
	for _, c := range calls {
		keys := sortedKeys(c.Args)
		if formB {
			b.WriteString("  <tool_id>")
			writeText(&b, c.Tool)
			b.WriteString("</tool_id>\n")
			if len(keys) == 0 {
				continue
			}
			b.WriteString("  <inputs>\n")
			for _, k := range keys {
				writeElem(&b, "input", k, true, c.Args[k], 4)
			}
			b.WriteString("  </inputs>\n")
			continue
		}
		if len(keys) == 0 {
			fmt.Fprintf(&b, "  <%s/>\n", c.Tool)
			continue
		}
		fmt.Fprintf(&b, "  <%s>\n", c.Tool)
		for _, k := range keys {
			writeElem(&b, k, "", false, c.Args[k], 4)
		}
		fmt.Fprintf(&b, "  </%s>\n", c.Tool)
	}
	b.WriteString("</ACTION>")
	return b.String()
}

// callTag reports whether a tool ID can be written as a form A element.
func callTag(id string) bool {
	return elemTag(id) && id != "tool_id" && id != "inputs"
}

// elemTag reports whether name can be written as an element name that
// Parse accepts inside a block.
func elemTag(name string) bool {
	if name == "" || !nameStartIn(name, 0, len(name)) || strings.EqualFold(name, "action") {
		return false
	}
	n, end := scanName(name, 0, len(name))
	return end == len(name) && qname(n)
}

// safeName makes name usable as an element or attribute name (lossy).
func safeName(name string) string {
	if elemTag(name) {
		return name
	}
	var b strings.Builder
	for i, r := range name {
		if r == ':' || !(isNameChar(r) || i == 0 && isNameStartRune(r)) {
			r = '_'
		}
		b.WriteRune(r)
	}
	s := b.String()
	if s == "" || !nameStartIn(s, 0, len(s)) || strings.EqualFold(s, "action") {
		s = "_" + s
	}
	return s
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// writeElem writes v as element tag; for a form B <input> (input true), key
// is its name attribute.
func writeElem(b *strings.Builder, tag, key string, input bool, v any, indent int) {
	pad := strings.Repeat(" ", indent)
	b.WriteString(pad)
	b.WriteString("<" + tag)
	if input {
		b.WriteString(` name="`)
		writeAttr(b, key)
		b.WriteByte('"')
	}
	switch v := v.(type) {
	case string:
		if v == "" {
			b.WriteString("/>\n")
			return
		}
		b.WriteByte('>')
		writeText(b, v)
	case []any:
		if len(v) == 0 {
			b.WriteString("/>\n")
			return
		}
		b.WriteString(">\n")
		for _, it := range v {
			writeElem(b, "item", "", false, it, indent+2)
		}
		b.WriteString(pad)
	case map[string]any:
		if len(v) == 0 {
			b.WriteString("/>\n")
			return
		}
		keys := sortedKeys(v)
		if attrObject(v, keys, input) {
			for _, k := range keys {
				b.WriteString(" " + k + `="`)
				writeAttr(b, v[k].(string))
				b.WriteByte('"')
			}
			b.WriteString("/>\n")
			return
		}
		b.WriteString(">\n")
		for _, k := range keys {
			writeElem(b, safeName(k), "", false, v[k], indent+2)
		}
		b.WriteString(pad)
	case nil:
		b.WriteString("/>\n")
		return
	default:
		j, err := json.Marshal(v)
		if err != nil {
			j = []byte(fmt.Sprint(v))
		}
		b.WriteByte('>')
		writeText(b, string(j))
	}
	b.WriteString("</" + tag + ">\n")
}

// attrObject reports whether an object can be written as attributes: all
// values strings, all keys valid names that Parse keeps (not xmlns, not the
// name attribute of a form B <input>).
func attrObject(m map[string]any, keys []string, input bool) bool {
	for _, k := range keys {
		if _, ok := m[k].(string); !ok || !elemTag(k) || k == "xmlns" || strings.HasPrefix(k, "xmlns:") || input && k == "name" {
			return false
		}
	}
	return true
}

// writeText writes a string so that Parse reads it back unchanged.
func writeText(b *strings.Builder, v string) {
	v = xmlSafe(v)
	if !needsCDATA(v) {
		b.WriteString(v)
		return
	}
	open := false
	for v != "" {
		// The next byte CDATA cannot carry as is: a CR (normalised to LF
		// on reading) or the ']]>' that would end the section.
		k := strings.IndexByte(v, '\r')
		if t := strings.Index(v, "]]>"); t >= 0 && (k < 0 || t < k) {
			k = t
		}
		if k < 0 {
			k = len(v)
		}
		if k > 0 {
			if !open {
				b.WriteString("<![CDATA[")
				open = true
			}
			b.WriteString(v[:k])
			v = v[k:]
			continue
		}
		if v[0] == '\r' {
			if open {
				b.WriteString("]]>")
				open = false
			}
			b.WriteString("&#13;")
			v = v[1:]
			continue
		}
		if !open {
			b.WriteString("<![CDATA[")
		}
		b.WriteString("]]]]><![CDATA[>")
		open = true
		v = v[3:]
	}
	if open {
		b.WriteString("]]>")
	}
}

func needsCDATA(v string) bool {
	return strings.ContainsAny(v, "<>&\r") || isSpace(v[0]) || isSpace(v[len(v)-1])
}

func writeAttr(b *strings.Builder, v string) {
	v = xmlSafe(v)
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '"':
			b.WriteString("&quot;")
		case '\t':
			b.WriteString("&#9;")
		case '\n':
			b.WriteString("&#10;")
		case '\r':
			b.WriteString("&#13;")
		default:
			b.WriteByte(c)
		}
	}
}

// xmlSafe replaces what XML 1.0 cannot carry (invalid UTF-8, control
// characters other than tab/LF/CR, U+FFFE, U+FFFF) with U+FFFD.
func xmlSafe(v string) string {
	ascii := true
	for i := 0; i < len(v); i++ {
		if c := v[i]; c >= utf8.RuneSelf || c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			ascii = false
			break
		}
	}
	if ascii {
		return v
	}
	ok := true
	for i := 0; i < len(v) && ok; {
		r, n := utf8.DecodeRuneInString(v[i:])
		ok = !(r == utf8.RuneError && n == 1) && xmlChar(int64(r))
		i += n
	}
	if ok {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); {
		r, n := utf8.DecodeRuneInString(v[i:])
		if r == utf8.RuneError && n == 1 || !xmlChar(int64(r)) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
		i += n
	}
	return b.String()
}
