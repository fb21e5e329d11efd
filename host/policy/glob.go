package policy

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxPatternLen bounds a path pattern, so a hostile manifest cannot make
// matching or intersection expensive.
const maxPatternLen = 1024

// Match reports whether the slash-separated name matches pattern.
//
// In a pattern, "*" matches any run of characters within one path segment,
// "?" matches exactly one character (not "/"), and a segment that is
// exactly "**" matches any number of whole segments, including none: so
// "data/**" matches "data", "data/a" and "data/a/b". Every other character
// matches itself, case-sensitively. There is no escaping and no character
// class.
//
// Hidden names follow the shell's rule: a name segment that starts with
// "." is matched only by a pattern segment that itself starts with "."
// ("*", "?" and "**" never match it). So "**" grants neither ".env" nor
// ".ssh/id_rsa" nor ".git/config"; ".env" and ".config/app/**" do.
//
// name is relative to its root: "" or "." is the root itself. A name that
// is not clean — it starts or ends with "/", has an empty, "." or ".."
// segment, or holds a NUL byte — never matches, whatever the pattern. In
// particular no name with a ".." segment ever matches.
//
// Match does not allocate.
func Match(pattern, name string) bool {
	if name == "." {
		name = ""
	}
	if !cleanName(name) {
		return false
	}
	return matchPath(pattern, name)
}

// cleanName reports whether name is "" or a sequence of non-empty segments
// separated by single slashes, none of them "." or "..", with no NUL.
func cleanName(name string) bool {
	if name == "" {
		return true
	}
	if strings.IndexByte(name, 0) >= 0 {
		return false
	}
	for {
		i := strings.IndexByte(name, '/')
		seg := name
		if i >= 0 {
			seg = name[:i]
		}
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
		if i < 0 {
			return true
		}
		name = name[i+1:]
	}
}

// nextSeg returns the segment of s starting at i and the start of the
// following one. A position at or past len(s) means s is exhausted.
func nextSeg(s string, i int) (seg string, next int) {
	j := strings.IndexByte(s[i:], '/')
	if j < 0 {
		return s[i:], len(s)
	}
	return s[i : i+j], i + j + 1
}

// matchPath matches a clean name against pattern segment by segment. "**"
// is a star over segments; the classic single-backtrack wildcard algorithm
// is exact because every other pattern segment matches exactly one name
// segment.
func matchPath(pattern, name string) bool {
	pi, ni := 0, 0
	starP, starN := -1, -1
	for {
		if pi < len(pattern) {
			pseg, pnext := nextSeg(pattern, pi)
			if pseg == "**" {
				if pnext >= len(pattern) && pattern[len(pattern)-1] != '/' {
					return !hasHidden(name[ni:]) // a trailing "**" matches whatever is left, unless hidden
				}
				starP, starN = pnext, ni
				pi = pnext
				continue
			}
			if ni < len(name) {
				nseg, nnext := nextSeg(name, ni)
				if matchSegment(pseg, nseg) {
					pi, ni = pnext, nnext
					continue
				}
			}
		} else if ni >= len(name) {
			return true
		}
		if starP < 0 || starN >= len(name) {
			return false
		}
		var skipped string
		skipped, starN = nextSeg(name, starN)
		if hidden(skipped) {
			return false // no "**" absorbs a hidden segment
		}
		pi, ni = starP, starN
	}
}

// hidden reports whether a name or pattern segment starts with ".".
func hidden(seg string) bool { return seg != "" && seg[0] == '.' }

// hasHidden reports whether any segment of a slash-separated name is
// hidden.
func hasHidden(name string) bool {
	for i := 0; i < len(name); {
		seg, next := nextSeg(name, i)
		if hidden(seg) {
			return true
		}
		i = next
	}
	return false
}

// matchSegment matches one name segment against one pattern segment with
// "*" and "?" (one UTF-8 character). A hidden segment needs a pattern
// segment that starts with ".".
func matchSegment(p, s string) bool {
	if hidden(s) && !hidden(p) {
		return false
	}
	pi, si := 0, 0
	starP, starS := -1, -1
	for si < len(s) {
		if pi < len(p) {
			switch c := p[pi]; c {
			case '*':
				for pi < len(p) && p[pi] == '*' {
					pi++
				}
				starP, starS = pi, si
				continue
			case '?':
				pi++
				si += runeLen(s, si)
				continue
			default:
				if c == s[si] {
					pi++
					si++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starS += runeLen(s, starS)
		pi, si = starP, starS
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// runeLen is the byte length of the UTF-8 character at s[i] (1 for an
// invalid byte).
func runeLen(s string, i int) int {
	if s[i] < utf8.RuneSelf {
		return 1
	}
	_, w := utf8.DecodeRuneInString(s[i:])
	return w
}

// couldContain reports whether some clean name equal to dir or beneath it
// can match pattern, i.e. whether dir must be traversable for pattern.
func couldContain(pattern, dir string) bool {
	pi, di := 0, 0
	for di < len(dir) {
		if pi >= len(pattern) {
			return false
		}
		pseg, pnext := nextSeg(pattern, pi)
		if pseg == "**" {
			// "**" absorbs the rest of dir, or a run of its non-hidden
			// segments after which the rest of the pattern goes on.
			rest := dir[di:]
			if !hasHidden(rest) {
				return true
			}
			for k := 0; ; {
				if pnext < len(pattern) && couldContain(pattern[pnext:], rest[k:]) {
					return true
				}
				seg, next := nextSeg(rest, k)
				if hidden(seg) || next >= len(rest) {
					return false
				}
				k = next
			}
		}
		dseg, dnext := nextSeg(dir, di)
		if !matchSegment(pseg, dseg) {
			return false
		}
		pi, di = pnext, dnext
	}
	return true
}

// ValidatePattern checks a path pattern relative to a root (without any
// "$TOOL/"-style prefix): non-empty, slash-separated, not absolute, no
// empty, "." or ".." segment, no backslash or NUL, and "**" only as a whole
// segment.
func ValidatePattern(p string) error {
	switch {
	case p == "":
		return errors.New("empty pattern")
	case len(p) > maxPatternLen:
		return fmt.Errorf("pattern longer than %d bytes", maxPatternLen)
	case p[0] == '/':
		return fmt.Errorf("%q is absolute; patterns are relative to their root", p)
	case strings.IndexByte(p, '\\') >= 0 || strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("%q contains a backslash or NUL; use forward slashes", p)
	case !utf8.ValidString(p):
		return fmt.Errorf("%q is not valid UTF-8", p)
	}
	for rest := p; rest != ""; {
		seg := rest
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			seg, rest = rest[:i], rest[i+1:]
			if rest == "" {
				return fmt.Errorf("%q has an empty segment", p)
			}
		} else {
			rest = ""
		}
		switch {
		case seg == "":
			return fmt.Errorf("%q has an empty segment", p)
		case seg == "..":
			return fmt.Errorf("%q leaves its root (\"..\")", p)
		case seg == ".":
			return fmt.Errorf("%q has a \".\" segment; write the path without it", p)
		case seg != "**" && strings.Contains(seg, "**"):
			return fmt.Errorf("%q: \"**\" must be a whole path segment", p)
		}
	}
	return nil
}
