package policy

import (
	"strings"
)

// Bounds of the intersection search. A pair of patterns whose intersection
// needs more work than this is treated as not overlapping (the safe side)
// and the denial says so.
const (
	maxIntersectSteps   = 4096
	maxIntersectResults = 32
)

// patternSubset reports whether every name matching p also matches q. It
// is sound (true only if the inclusion holds) but not complete: for a few
// exotic pairs that are equal as languages ("?*" and "*?") it answers
// false, which only costs a spurious "narrowed" note.
func patternSubset(p, q string) bool {
	if p == q {
		return true
	}
	if q == "**" {
		return !hasHidden(p) // "**" covers every pattern without a hidden segment
	}
	// The classic wildcard algorithm over segments, with q as the pattern
	// and p's segments as the text: q's "**" absorbs any p segments (even
	// p's "**"); q's other segments must cover exactly one p segment that
	// is not "**".
	pi, qi := 0, 0
	starQ, starP := -1, -1
	for {
		if qi < len(q) {
			qseg, qnext := nextSeg(q, qi)
			if qseg == "**" {
				if qnext >= len(q) {
					return !hasHidden(p[pi:])
				}
				starQ, starP = qnext, pi
				qi = qnext
				continue
			}
			if pi < len(p) {
				pseg, pnext := nextSeg(p, pi)
				if pseg != "**" && segmentSubset(pseg, qseg) {
					qi, pi = qnext, pnext
					continue
				}
			}
		} else if pi >= len(p) {
			return true
		}
		if starQ < 0 || starP >= len(p) {
			return false
		}
		var skipped string
		skipped, starP = nextSeg(p, starP)
		if hidden(skipped) {
			return false
		}
		qi, pi = starQ, starP
	}
}

// segmentSubset reports whether every segment matching p also matches q,
// by matching q against p's tokens: q's "*" absorbs any tokens, q's "?"
// covers one literal or "?", a literal covers the same literal.
func segmentSubset(p, q string) bool {
	if p == q {
		return true
	}
	if hidden(p) != hidden(q) {
		return false // one matches only hidden names, the other none
	}
	pi, qi := 0, 0
	starQ, starP := -1, -1
	for pi < len(p) {
		if qi < len(q) {
			switch c := q[qi]; c {
			case '*':
				for qi < len(q) && q[qi] == '*' {
					qi++
				}
				starQ, starP = qi, pi
				continue
			case '?':
				if p[pi] != '*' {
					qi++
					pi += runeLen(p, pi)
					continue
				}
			default:
				if p[pi] != '*' && p[pi] != '?' {
					w := runeLen(p, pi)
					if qi+w <= len(q) && q[qi:qi+w] == p[pi:pi+w] {
						qi += w
						pi += w
						continue
					}
				}
			}
		}
		if starQ < 0 {
			return false
		}
		starP += runeLen(p, starP)
		qi, pi = starQ, starP
	}
	for qi < len(q) && q[qi] == '*' {
		qi++
	}
	return qi == len(q)
}

// intersectPatterns returns patterns whose union is exactly the set of
// names matching both a and b (nil when they share no name). ok is false
// when the search exceeded its budget; the result is then nil.
func intersectPatterns(a, b string) (out []string, ok bool) {
	if patternSubset(a, b) {
		return []string{a}, true
	}
	if patternSubset(b, a) {
		return []string{b}, true
	}
	x := &intersector{a: strings.Split(a, "/"), b: strings.Split(b, "/"), segs: map[[2]int][]string{}}
	x.walk(0, 0, nil)
	if x.overflow {
		return nil, false
	}
	return prune(x.out), true
}

// intersector enumerates the paths of the product of two segment automata.
// "**" is a self-loop state; in the product a loop only arises where both
// sides sit on "**", and it is emitted as one "**" segment. Every other
// move advances at least one side, so the walk terminates.
type intersector struct {
	a, b     []string
	out      []string
	segs     map[[2]int][]string // intersections of a[i] and b[j]
	steps    int                 // shared with the segment-level searches
	overflow bool
}

func (x *intersector) walk(i, j int, acc []string) {
	if x.overflow {
		return
	}
	if x.steps++; x.steps > maxIntersectSteps {
		x.overflow = true
		return
	}
	ai, bj := i < len(x.a), j < len(x.b)
	if !ai && !bj {
		x.emit(acc)
		return
	}
	astar := ai && x.a[i] == "**"
	bstar := bj && x.b[j] == "**"
	switch {
	case astar && bstar:
		acc = append(acc, "**")
		x.walk(i+1, j, acc)
		x.walk(i, j+1, acc)
	case astar:
		x.walk(i+1, j, acc)
		if bj && !hidden(x.b[j]) { // "**" never absorbs a hidden segment
			x.walk(i, j+1, append(acc, x.b[j]))
		}
	case bstar:
		x.walk(i, j+1, acc)
		if ai && !hidden(x.a[i]) {
			x.walk(i+1, j, append(acc, x.a[i]))
		}
	case ai && bj:
		segs, seen := x.segs[[2]int{i, j}]
		if !seen {
			var ok bool
			segs, ok = intersectSegments(x.a[i], x.b[j], &x.steps)
			if !ok {
				x.overflow = true
				return
			}
			x.segs[[2]int{i, j}] = segs
		}
		for _, s := range segs {
			x.walk(i+1, j+1, append(acc, s))
		}
	}
}

func (x *intersector) emit(acc []string) {
	// Collapse runs of "**", which the product can produce.
	segs := make([]string, 0, len(acc))
	for _, s := range acc {
		if s == "**" && len(segs) > 0 && segs[len(segs)-1] == "**" {
			continue
		}
		segs = append(segs, s)
	}
	p := strings.Join(segs, "/")
	for _, o := range x.out {
		if o == p {
			return
		}
	}
	if len(x.out) >= maxIntersectResults {
		x.overflow = true
		return
	}
	x.out = append(x.out, p)
}

// intersectSegments is intersectPatterns for single segments, over the
// characters of "*", "?" and literals. steps is the shared work budget.
func intersectSegments(a, b string, steps *int) (out []string, ok bool) {
	if hidden(a) != hidden(b) {
		return nil, true // hidden names only on one side
	}
	if segmentSubset(a, b) {
		return []string{a}, true
	}
	if segmentSubset(b, a) {
		return []string{b}, true
	}
	x := &segIntersector{a: segTokens(a), b: segTokens(b), steps: steps}
	x.walk(0, 0, nil)
	if x.overflow {
		return nil, false
	}
	var res []string
	for _, s := range x.out {
		if s == "." || s == ".." {
			continue // no clean name has such a segment
		}
		dup := false
		for _, r := range res {
			if segmentSubset(s, r) {
				dup = true
				break
			}
		}
		if !dup {
			res = append(res, s)
		}
	}
	return res, true
}

// segTokens splits a segment pattern into tokens: "*", "?" or one literal
// UTF-8 character. Runs of "*" become one token.
func segTokens(s string) []string {
	toks := make([]string, 0, len(s))
	for i := 0; i < len(s); {
		w := runeLen(s, i)
		t := s[i : i+w]
		i += w
		if t == "*" && len(toks) > 0 && toks[len(toks)-1] == "*" {
			continue
		}
		toks = append(toks, t)
	}
	return toks
}

type segIntersector struct {
	a, b     []string
	out      []string
	steps    *int
	overflow bool
}

func (x *segIntersector) walk(i, j int, acc []string) {
	if x.overflow {
		return
	}
	if *x.steps++; *x.steps > maxIntersectSteps {
		x.overflow = true
		return
	}
	ai, bj := i < len(x.a), j < len(x.b)
	if !ai && !bj {
		s := strings.Join(acc, "")
		s = collapseStars(s)
		for _, o := range x.out {
			if o == s {
				return
			}
		}
		if len(x.out) >= maxIntersectResults {
			x.overflow = true
			return
		}
		x.out = append(x.out, s)
		return
	}
	astar := ai && x.a[i] == "*"
	bstar := bj && x.b[j] == "*"
	switch {
	case astar && bstar:
		acc = append(acc, "*")
		x.walk(i+1, j, acc)
		x.walk(i, j+1, acc)
	case astar:
		x.walk(i+1, j, acc)
		if bj {
			x.walk(i, j+1, append(acc, x.b[j]))
		}
	case bstar:
		x.walk(i, j+1, acc)
		if ai {
			x.walk(i+1, j, append(acc, x.a[i]))
		}
	case ai && bj:
		ta, tb := x.a[i], x.b[j]
		switch {
		case ta == tb:
			x.walk(i+1, j+1, append(acc, ta))
		case ta == "?":
			x.walk(i+1, j+1, append(acc, tb))
		case tb == "?":
			x.walk(i+1, j+1, append(acc, ta))
		}
	}
}

func collapseStars(s string) string {
	if !strings.Contains(s, "**") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '*' && i > 0 && s[i-1] == '*' {
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// prune drops every pattern covered by another one in the list, keeping
// the first of two equal ones.
func prune(ps []string) []string {
	var out []string
	for i, p := range ps {
		covered := false
		for j, q := range ps {
			if i == j {
				continue
			}
			if patternSubset(p, q) && (!patternSubset(q, p) || j < i) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	return out
}
