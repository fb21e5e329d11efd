package schema

import (
	"sort"
	"strings"
	"unicode"
)

// Suggest returns up to max candidates closest to name, best first, for a
// did-you-mean message. Names are compared case-insensitively with '_', '-'
// and '.' ignored, so "playerId" matches "player_id" exactly; a candidate
// qualifies when its edit distance (optimal string alignment: insertions,
// deletions, substitutions and adjacent transpositions) is within a third
// of the name's length (at least 1, or 2 for names longer than 3). When
// name has no ':' it is also compared with the part after ':' of each
// candidate, so "echo" suggests "core:echo". Ties are broken by candidate
// order (alphabetical). max <= 0 means no limit.
func Suggest(name string, candidates []string, max int) []string {
	n := normalize(name)
	if n == "" {
		return nil
	}
	limit := len([]rune(n)) / 3
	switch l := len([]rune(n)); {
	case l <= 3:
		limit = 1
	case limit < 2:
		limit = 2
	}
	type scored struct {
		cand string
		d    int
	}
	var out []scored
	seen := map[string]bool{}
	for _, c := range candidates {
		if seen[c] {
			continue
		}
		seen[c] = true
		d := distance(n, normalize(c))
		if !strings.Contains(name, ":") {
			if _, after, ok := strings.Cut(c, ":"); ok {
				d = min(d, distance(n, normalize(after)))
			}
		}
		if d <= limit {
			out = append(out, scored{c, d})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].d != out[j].d {
			return out[i].d < out[j].d
		}
		return out[i].cand < out[j].cand
	})
	if max > 0 && len(out) > max {
		out = out[:max]
	}
	res := make([]string, len(out))
	for i, s := range out {
		res[i] = s.cand
	}
	return res
}

// normalize lower-cases s and drops the separators '_', '-' and '.'.
func normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch r {
		case '_', '-', '.':
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// distance is the optimal-string-alignment edit distance between a and b,
// counted in runes.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) == 0 {
		return len(rb)
	}
	if len(rb) == 0 {
		return len(ra)
	}
	// three rows: i-2, i-1, i
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
