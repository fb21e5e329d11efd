package credential

import (
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Mark replaces a redacted secret.
const Mark = "[REDACTED]"

// sigLen is the length of an HMAC-SHA256 MAC in unpadded base64url: a
// token glued to more base64url characters still holds its live prefix.
const sigLen = 43

// MinSecret is the shortest secret a Redactor removes: shorter ones would
// match everywhere and protect nothing.
const MinSecret = 4

// Live reports whether a token-shaped string is a live credential (of
// any tenant and any tool), for example an HMAC issuer's Verify.
type Live func(token string) bool

// Redactor removes secrets from what a tool hands back: given strings
// (the host's environment values, a call's own tokens and their
// encodings) and every live token, each in any string as decoded (a JSON
// string literal is read with its escapes decoded, so "\u0061hc1…" is
// the token it spells). Its cost is linear in the input.
type Redactor struct {
	secrets  []string
	replacer *strings.Replacer
	live     Live
}

// NewRedactor returns a Redactor of secrets (those shorter than
// MinSecret are left out) and of the tokens live accepts (nil: none). It
// returns nil when there is nothing to redact; a nil Redactor changes
// nothing.
func NewRedactor(secrets []string, live Live) *Redactor {
	r := &Redactor{live: live}
	for _, s := range secrets {
		if len(s) >= MinSecret {
			r.secrets = append(r.secrets, s)
		}
	}
	if len(r.secrets) == 0 && live == nil {
		return nil
	}
	if len(r.secrets) > 0 {
		// strings.Replacer picks, at each position, the first listed
		// secret that matches, so the longest come first: a secret that is
		// the prefix of another (a base64 form without its padding) must
		// not cut the longer one short.
		sorted := append([]string(nil), r.secrets...)
		sortByLenDesc(sorted)
		pairs := make([]string, 0, 2*len(sorted))
		for _, s := range sorted {
			pairs = append(pairs, s, Mark)
		}
		r.replacer = strings.NewReplacer(pairs...)
	}
	return r
}

func sortByLenDesc(s []string) {
	// Insertion sort: a call has a handful of secrets.
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && len(s[j]) > len(s[j-1]); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// String redacts s as written and, where s holds JSON string literals
// (a JSON document, a log line quoting one), as each literal decodes.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	s = r.plain(s)
	if !strings.Contains(s, `\u`) && (len(r.secrets) == 0 || strings.IndexByte(s, '\\') < 0) {
		// Every literal reads as written: only \u can spell a token's
		// characters, and no other escape is there to spell a secret's.
		return s
	}
	s = r.literals(s)
	// Text that is not JSON may pair its quotes otherwise than a reader
	// would: a secret that still shows once every escape is decoded is
	// redacted in that decoded form (fail closed; it is no longer JSON).
	if d := unescape(s); r.plain(d) != d {
		return r.plain(d)
	}
	return s
}

// Bytes is String for bytes; it returns b itself when nothing changed.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil {
		return b
	}
	s := string(b)
	if out := r.String(s); out != s {
		return []byte(out)
	}
	return b
}

// Value redacts every string (keys too) of a JSON-like value: what
// encoding/json makes of it is walked, and when a string changed, the
// redacted decoded value is returned with true; otherwise v and false.
// A value encoding/json cannot encode cannot be scanned: it is dropped
// (nil, true).
func (r *Redactor) Value(v any) (any, bool) {
	if r == nil || v == nil {
		return v, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, true
	}
	if s := string(b); r.String(s) == s && !strings.Contains(s, `\\`) {
		// No string of v holds a secret, as written or decoded once, and
		// none holds escapes to decode again: v is clean as it is.
		return v, false
	}
	var g any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if dec.Decode(&g) != nil {
		return v, false
	}
	g, changed := r.walk(g)
	if !changed {
		return v, false
	}
	return g, true
}

func (r *Redactor) walk(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		s := r.String(x)
		return s, s != x
	case []any:
		changed := false
		for i, e := range x {
			var c bool
			if x[i], c = r.walk(e); c {
				changed = true
			}
		}
		return x, changed
	case map[string]any:
		changed := false
		out := make(map[string]any, len(x))
		for k, e := range x {
			nk := r.String(k)
			ne, c := r.walk(e)
			if c || nk != k {
				changed = true
			}
			out[nk] = ne
		}
		return out, changed
	}
	return v, false
}

// Contains reports whether String would change s.
func (r *Redactor) Contains(s string) bool {
	return r != nil && r.String(s) != s
}

// plain redacts s as written: live tokens, then the given secrets.
func (r *Redactor) plain(s string) string {
	if r.live != nil && strings.Contains(s, Prefix) {
		s = r.tokens(s)
	}
	if r.replacer != nil {
		for _, v := range r.secrets {
			if strings.Contains(s, v) {
				return r.replacer.Replace(s)
			}
		}
	}
	return s
}

// tokens replaces the live tokens of s with Mark.
func (r *Redactor) tokens(s string) string {
	var b strings.Builder
	last, found := 0, false // s[:last] is written or redacted
	candidates(s, func(start, end int) {
		if (found && end <= last) || !r.live(s[start:end]) {
			return
		}
		if found && start < last {
			last = end // overlaps the token just redacted
			return
		}
		b.WriteString(s[last:start])
		b.WriteString(Mark)
		last, found = end, true
	})
	if !found {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// Find returns every token-shaped string of text, for a caller to verify
// each: for each "ahc1." the token it starts (payload, '.', signature),
// and when the signature runs on, also its first 43 characters (a token
// glued to more text). There is no cap: a caller that stopped after N
// would let a live token hide behind N decoys.
func Find(text string) []string {
	var out []string
	candidates(text, func(start, end int) { out = append(out, text[start:end]) })
	return out
}

// candidates calls f with the bounds of every token-shaped substring of
// s, in increasing start order. Every byte is looked at a bounded number
// of times: the search for the next "ahc1." resumes right after the last
// one (a payload has no '.', so a prefix ending it is found), each payload
// and signature run is scanned once.
func candidates(s string, f func(start, end int)) {
	for i := 0; i < len(s); {
		k := strings.Index(s[i:], Prefix)
		if k < 0 {
			return
		}
		start := i + k
		p := start + len(Prefix)
		i = p
		q := run(s, p)
		if q == p || q >= len(s) || s[q] != '.' {
			continue
		}
		e := run(s, q+1)
		if e == q+1 {
			continue
		}
		if e-(q+1) > sigLen {
			f(start, q+1+sigLen)
		}
		f(start, e)
	}
}

// run returns the end of the base64url run starting at i.
func run(s string, i int) int {
	for i < len(s) && tokenByte(s[i]) {
		i++
	}
	return i
}

func tokenByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// literals redacts the JSON string literals of s that hold escapes, as
// decoded: a changed literal is written back JSON-encoded. A literal
// runs from '"' to the next unescaped '"' (or to the end of s: a cut
// document still has its strings redacted).
func (r *Redactor) literals(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			continue
		}
		j, esc := i+1, false
		for j < len(s) && s[j] != '"' {
			if s[j] == '\\' {
				esc = true
				j++
			}
			j++
		}
		closed := j < len(s)
		inner := s[i+1 : min(j, len(s))]
		if esc {
			dec := unescape(inner)
			if red := r.plain(dec); red != dec {
				enc, _ := json.Marshal(red)
				if !closed {
					enc = enc[:len(enc)-1]
				}
				b.WriteString(s[last:i])
				b.Write(enc)
				last = min(j+1, len(s))
			}
		}
		i = j
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// unescape decodes the escapes of a JSON string literal's inside as
// encoding/json would, leniently: a malformed escape stays as written.
func unescape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch d := s[i+1]; d {
		case '"', '\\', '/':
			b.WriteByte(d)
			i++
		case 'b':
			b.WriteByte('\b')
			i++
		case 'f':
			b.WriteByte('\f')
			i++
		case 'n':
			b.WriteByte('\n')
			i++
		case 'r':
			b.WriteByte('\r')
			i++
		case 't':
			b.WriteByte('\t')
			i++
		case 'u':
			v, ok := hex4(s, i+2)
			if !ok {
				b.WriteByte(c)
				continue
			}
			ru, n := rune(v), 6
			if utf16.IsSurrogate(ru) {
				if w, ok := hex4(s, i+8); ok && s[i+6] == '\\' && s[i+7] == 'u' {
					if p := utf16.DecodeRune(ru, rune(w)); p != utf8.RuneError {
						ru, n = p, 12
					}
				}
				if n == 6 {
					ru = utf8.RuneError
				}
			}
			b.WriteRune(ru)
			i += n - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// hex4 reads the four hex digits at s[i:].
func hex4(s string, i int) (uint16, bool) {
	if i < 0 || i+4 > len(s) {
		return 0, false
	}
	var v uint16
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint16(c)
	}
	return v, true
}
