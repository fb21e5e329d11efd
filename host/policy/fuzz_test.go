package policy

import (
	"strings"
	"testing"
)

// FuzzPolicyGlob checks Match, couldContain and the intersection on
// arbitrary patterns and names: nothing panics; a name with a ".."
// segment (or otherwise unclean) never matches; every folder above a
// matching name is listable; and a name matches the intersection of two
// patterns exactly when it matches both.
func FuzzPolicyGlob(f *testing.F) {
	seeds := [][3]string{
		{"**", "data/**", "data/a.txt"},
		{"data/**", "**/*.md", "data/x/y.md"},
		{"*.txt", "a*", "a.txt"},
		{"a/**/b", "**/b/**", "a/x/b"},
		{"?", "*", "é"},
		{"**", "**", "../etc/passwd"},
		{"data/**", "data/*", "data/../secret"},
		{"a*b*c", "*b*", "abbc"},
		{"**", ".env", ".env"},
		{"**/.git/**", "**", "src/.git/config"},
		{".*", "*", ".x"},
		{"**", ".config/**", ".config/a"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, p, q, name string) {
		m := Match(p, name)
		if m {
			if name != "." && !cleanName(name) {
				t.Fatalf("Match(%q, %q) = true for an unclean name", p, name)
			}
			for _, seg := range strings.Split(name, "/") {
				if seg == ".." {
					t.Fatalf("Match(%q, %q) = true for a name with a \"..\" segment", p, name)
				}
			}
			for dir := name; dir != "" && dir != "."; {
				i := strings.LastIndexByte(dir, '/')
				if i < 0 {
					dir = ""
				} else {
					dir = dir[:i]
				}
				if !couldContain(p, dir) {
					t.Fatalf("Match(%q, %q) but couldContain(%q, %q) = false", p, name, p, dir)
				}
			}
		}
		if ValidatePattern(p) != nil || ValidatePattern(q) != nil || len(p)+len(q) > 64 {
			return
		}
		got, ok := intersectPatterns(p, q)
		if !ok {
			return
		}
		both := m && Match(q, name)
		in := false
		for _, x := range got {
			if err := ValidatePattern(x); err != nil {
				t.Fatalf("intersectPatterns(%q, %q) gave invalid pattern %q: %v", p, q, x, err)
			}
			if Match(x, name) {
				in = true
			}
		}
		if both != in {
			t.Fatalf("%q matches %q and %q: %v; matches their intersection %q: %v", name, p, q, both, got, in)
		}
		if patternSubset(p, q) && m && !Match(q, name) {
			t.Fatalf("patternSubset(%q, %q) but %q matches only the first", p, q, name)
		}
	})
}

// FuzzHostRule checks that ParseHostRule never panics, that what it
// accepts prints back to an equal rule, and that AllowsHost never panics
// and never admits a host the rule's own name cannot match.
func FuzzHostRule(f *testing.F) {
	for _, s := range [][2]string{
		{"api.example.com", "api.example.com"},
		{"*.example.com", "a.b.example.com"},
		{"https://api.example.com:8443", "API.example.com."},
		{"[::1]:8080", "[::1]"},
		{"10.0.0.7", "0x0a000007"},
		{"*", "127.1"},
	} {
		f.Add(s[0], s[1], "https", 443)
	}
	f.Fuzz(func(t *testing.T, rule, host, scheme string, port int) {
		r, err := ParseHostRule(rule)
		if err != nil {
			return
		}
		back, err := ParseHostRule(r.String())
		if err != nil || back != r {
			t.Fatalf("ParseHostRule(%q) = %+v, whose String %q parses to %+v, %v", rule, r, r.String(), back, err)
		}
		g := &Grant{Hosts: []HostRule{r}}
		if g.AllowsHost(scheme, host, port) {
			if scheme != SchemeHTTP && scheme != SchemeHTTPS {
				t.Fatalf("AllowsHost admitted scheme %q", scheme)
			}
			h := strings.TrimSuffix(strings.Trim(host, "[]"), ".")
			if looksLikeIP(h) != looksLikeIP(r.Host) {
				t.Fatalf("rule %q admitted %q across IP and name", rule, host)
			}
		}
	})
}
