package policy

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/manifest"
)

func TestPatternSubset(t *testing.T) {
	tests := []struct {
		p, q string
		want bool
	}{
		{"data/**", "**", true},
		{"**", "data/**", false},
		{"data/**", "data/**", true},
		{"data/a.txt", "data/*", true},
		{"data/*", "data/a.txt", false},
		{"data/x/**", "data/**", true},
		{"data/**", "data/*/**", false},
		{"data/*.txt", "data/*", true},
		{"data/*", "data/*.txt", false},
		{"a/**/b", "a/**", true},
		{"a/**", "a/**/b", false},
		{"*.txt", "**/*.txt", true},
		{"x/*.txt", "**/*.txt", true},
		{"a?c", "a*", true},
		{"a*", "a?c", false},
		{"abc", "a?c", true},
		{"a?c", "abc", false},
	}
	for _, tc := range tests {
		if got := patternSubset(tc.p, tc.q); got != tc.want {
			t.Errorf("patternSubset(%q, %q) = %v, want %v", tc.p, tc.q, got, tc.want)
		}
	}
}

func TestIntersectPatterns(t *testing.T) {
	tests := []struct {
		a, b string
		want []string
	}{
		{"data/**", "**", []string{"data/**"}},
		{"**", "data/**", []string{"data/**"}},
		{"data/**", "docs/**", nil},
		{"*.txt", "data/**", nil},
		{"**/*.txt", "data/**", []string{"data/**/*.txt"}},
		{"data/*", "*/x", []string{"data/x"}},
		{"a*", "*b", []string{"a*b"}},
		{"*.txt", "a*", []string{"a*.txt"}},
		{"a/**", "**/b", []string{"a/**/b"}},
		{"ab*", "*bc", []string{"ab*bc", "abc"}},
	}
	for _, tc := range tests {
		got, ok := intersectPatterns(tc.a, tc.b)
		if !ok {
			t.Fatalf("intersectPatterns(%q, %q) overflowed", tc.a, tc.b)
		}
		slices.Sort(got)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("intersectPatterns(%q, %q) = %q, want %q", tc.a, tc.b, got, want)
		}
	}
}

// names returns every clean name of up to depth segments over a small
// alphabet of segments.
func names(depth int) []string {
	segs := []string{"a", "b", "ab", "ba", "x.txt", "a.txt", "aab"}
	out := []string{""}
	level := []string{""}
	for d := 0; d < depth; d++ {
		var next []string
		for _, p := range level {
			for _, s := range segs {
				n := s
				if p != "" {
					n = p + "/" + s
				}
				next = append(next, n)
			}
		}
		out = append(out, next...)
		level = next
	}
	return out
}

// TestIntersectExact checks on every small name that a name matches the
// intersection exactly when it matches both patterns, and that
// patternSubset never claims an inclusion that a name refutes.
func TestIntersectExact(t *testing.T) {
	pats := []string{"**", "a", "*", "a*", "*b", "?", "??", "a?", "*.txt", "a/**", "**/b", "*/b", "a/*",
		"**/a/**", "a/**/b", "**/*.txt", "b/**", "*a*", "a*b", "**/ab"}
	all := names(3)
	for _, p := range pats {
		for _, q := range pats {
			got, ok := intersectPatterns(p, q)
			if !ok {
				t.Fatalf("intersectPatterns(%q, %q) overflowed", p, q)
			}
			sub := patternSubset(p, q)
			for _, n := range all {
				both := Match(p, n) && Match(q, n)
				inX := false
				for _, x := range got {
					if Match(x, n) {
						inX = true
						break
					}
				}
				if both != inX {
					t.Fatalf("name %q: matches %q and %q = %v, matches intersection %q = %v", n, p, q, both, got, inX)
				}
				if sub && Match(p, n) && !Match(q, n) {
					t.Fatalf("patternSubset(%q, %q) but %q matches only the first", p, q, n)
				}
			}
		}
	}
}

func TestIntersectBudget(t *testing.T) {
	a := strings.Repeat("**/a*a*a*a/", 12) + "x"
	b := strings.Repeat("**/*b*b*b*/", 12) + "x"
	if _, ok := intersectPatterns(a, b); ok {
		t.Fatalf("intersectPatterns of two pathological patterns did not hit its budget")
	}
}

func TestCouldContain(t *testing.T) {
	tests := []struct {
		pattern, dir string
		want         bool
	}{
		{"data/**", "", true},
		{"data/**", "data", true},
		{"data/**", "data/x/y", true},
		{"data/**", "other", false},
		{"data/**", "datax", false},
		{"a/*/c.txt", "a", true},
		{"a/*/c.txt", "a/b", true},
		{"a/*/c.txt", "a/b/c.txt", true},
		{"a/*/c.txt", "a/b/d", false},
		{"**/*.md", "any/where", true},
		{"x.txt", "", true},
		{"x.txt", "y", false},
	}
	for _, tc := range tests {
		if got := couldContain(tc.pattern, tc.dir); got != tc.want {
			t.Errorf("couldContain(%q, %q) = %v, want %v", tc.pattern, tc.dir, got, tc.want)
		}
	}
}

// TestGrantExact checks Grant end to end on a small universe: a workspace
// name is allowed exactly when it matches some requested glob and some
// ceiling glob, for reads and writes alike.
func TestGrantExact(t *testing.T) {
	sets := [][]string{
		{"**"}, {"a/**"}, {"*.txt", "b/**"}, {"**/a*", "ab"}, {"a/*/b", "*/*"}, {"b/**/x.txt"}, {},
	}
	all := names(3)
	for _, req := range sets {
		for _, ceil := range sets {
			p := &Policy{FileAccess: FileAccess{AllowRead: ceil, AllowWrite: ceil}}
			tl := &manifest.Tool{ToolID: "t:x", SecurityContext: &manifest.SecurityContext{
				FileAccess: &manifest.FileAccess{AllowRead: req, AllowWrite: req},
			}}
			g := p.Grant(tl, func(string) (string, bool) { return "", false })
			for _, n := range all {
				want := matchesAny(req, n) && matchesAny(ceil, n)
				for _, write := range []bool{false, true} {
					if got := g.Allows(RootWorkspace, n, write); got != want {
						t.Fatalf("request %q, ceiling %q: Allows(%q, write=%v) = %v, want %v (read %v, write %v)",
							req, ceil, n, write, got, want, g.Read, g.Write)
					}
				}
				if want && !g.CanList(RootWorkspace, path.Dir("/" + n)[1:]) {
					t.Fatalf("request %q, ceiling %q: %q allowed but its folder cannot be listed", req, ceil, n)
				}
			}
		}
	}
}

func matchesAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if Match(p, name) {
			return true
		}
	}
	return false
}
