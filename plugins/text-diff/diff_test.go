package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/internal/unidiff"
)

func intp(n int) *int { return &n }

// The expected diffs were checked against GNU diffutils 3.x:
// diff -u --label a --label b from to.
func TestDiffGolden(t *testing.T) {
	tests := []struct {
		name, from, to string
		context        *int
		want           string
	}{
		{"identical", "a\nb\n", "a\nb\n", nil, ""},
		{"both empty", "", "", nil, ""},
		{"one change", "a\nb\nc\n", "a\nB\nc\n", nil,
			"--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"from empty", "", "x\ny\n", nil,
			"--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n"},
		{"to empty", "x\n", "", nil,
			"--- a\n+++ b\n@@ -1 +0,0 @@\n-x\n"},
		{"no newline at end", "a\nb", "a\nb\n", nil,
			"--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n", nil,
			"--- a\n+++ b\n@@ -1,5 +1,5 @@\n 1\n-2\n+X\n 3\n 4\n 5\n@@ -8,5 +8,5 @@\n 8\n 9\n 10\n-11\n+Y\n 12\n"},
		{"merged when context touches", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\nX\n3\n4\n5\n6\n7\nY\n9\n", nil,
			"--- a\n+++ b\n@@ -1,9 +1,9 @@\n 1\n-2\n+X\n 3\n 4\n 5\n 6\n 7\n-8\n+Y\n 9\n"},
		{"zero context insertion", "a\nb\n", "a\nnew\nb\n", intp(0),
			"--- a\n+++ b\n@@ -1,0 +2 @@\n+new\n"},
		{"context one", "a\nb\nc\nd\n", "a\nb\nC\nd\n", intp(1),
			"--- a\n+++ b\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Diff(Input{From: tc.from, To: tc.to, Context: tc.context})
			if err != nil {
				t.Fatal(err)
			}
			if got.Diff != tc.want {
				t.Errorf("diff =\n%s\nwant\n%s", got.Diff, tc.want)
			}
			if got.Identical != (tc.want == "") {
				t.Errorf("identical = %v", got.Identical)
			}
		})
	}
}

func TestDiffCountsAndLabels(t *testing.T) {
	got, err := Diff(Input{From: "a\nb\nc\n", To: "b\nc\nd\ne\n", FromLabel: "old.txt", ToLabel: "new.txt"})
	if err != nil {
		t.Fatal(err)
	}
	want := Output{Added: 2, Removed: 1, Hunks: 1,
		Diff: "--- old.txt\n+++ new.txt\n@@ -1,3 +1,4 @@\n-a\n b\n c\n+d\n+e\n"}
	if got != want {
		t.Errorf("Diff = %+v\nwant   %+v", got, want)
	}
}

func TestDiffErrors(t *testing.T) {
	var from, to strings.Builder
	for i := 0; i < maxEdits; i++ {
		fmt.Fprintf(&from, "a%d\n", i)
		fmt.Fprintf(&to, "b%d\n", i)
	}
	tests := []struct {
		name string
		in   Input
		want string
	}{
		{"negative context", Input{Context: intp(-1)}, "context must be between"},
		{"huge context", Input{Context: intp(maxContext + 1)}, "context must be between"},
		{"multi-line label", Input{FromLabel: "a\nb"}, "labels must be one line"},
		{"too different", Input{From: from.String(), To: to.String()}, "differ in more than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Diff(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if !errors.Is(err, abi.ErrInvalidArguments) {
				t.Errorf("err = %v, want INVALID_ARGUMENTS", err)
			}
		})
	}
}

func TestDiffLargeSimilarTexts(t *testing.T) {
	var from, to strings.Builder
	for i := 0; i < 50000; i++ {
		line := "line " + strconv.Itoa(i) + "\n"
		from.WriteString(line)
		if i%1000 == 0 {
			to.WriteString("changed\n")
			continue
		}
		to.WriteString(line)
	}
	got, err := Diff(Input{From: from.String(), To: to.String()})
	if err != nil {
		t.Fatal(err)
	}
	if got.Added != 50 || got.Removed != 50 || got.Hunks != 50 {
		t.Errorf("added %d removed %d hunks %d, want 50 50 50", got.Added, got.Removed, got.Hunks)
	}
	if patched := apply(t, from.String(), got.Diff); patched != to.String() {
		t.Error("applying the diff does not give the new text")
	}
}

// TestDiffProperties checks on random texts that the diff is minimal (the
// edit distance from a longest common subsequence) and that applying it
// to From gives To.
func TestDiffProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a\n", "b\n", "c\n", "\n", "a"}
	randText := func() string {
		n := rng.IntN(12)
		var sb strings.Builder
		for i := 0; i < n; i++ {
			l := alphabet[rng.IntN(len(alphabet)-1)]
			if i == n-1 {
				l = alphabet[rng.IntN(len(alphabet))]
			}
			sb.WriteString(l)
		}
		return sb.String()
	}
	for i := 0; i < 3000; i++ {
		from, to := randText(), randText()
		ctx := rng.IntN(4)
		got, err := Diff(Input{From: from, To: to, Context: &ctx})
		if err != nil {
			t.Fatal(err)
		}
		a, b := unidiff.SplitLines(from), unidiff.SplitLines(to)
		if want := len(a) + len(b) - 2*lcs(a, b); got.Added+got.Removed != want {
			t.Fatalf("%q → %q: %d edits, minimal is %d", from, to, got.Added+got.Removed, want)
		}
		if got.Identical != (from == to) {
			t.Fatalf("%q → %q: identical = %v", from, to, got.Identical)
		}
		if patched := apply(t, from, got.Diff); patched != to {
			t.Fatalf("%q → %q (context %d): applying\n%s\ngives %q", from, to, ctx, got.Diff, patched)
		}
	}
}

func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

// apply applies a unified diff to from, checking that context and
// removed lines match and that hunk headers are consistent.
func apply(t *testing.T, from, diff string) string {
	t.Helper()
	if diff == "" {
		return from
	}
	src := unidiff.SplitLines(from)
	lines := strings.SplitAfter(diff, "\n")
	if !strings.HasPrefix(lines[0], "--- ") || !strings.HasPrefix(lines[1], "+++ ") {
		t.Fatalf("no header: %q", diff)
	}
	var out []string
	pos := 0
	i := 2
	for i < len(lines) && lines[i] != "" {
		var aStart, aCount, bStart, bCount int
		hdr := lines[i]
		if _, err := fmt.Sscanf(normalizeHeader(hdr), "@@ -%d,%d +%d,%d @@\n", &aStart, &aCount, &bStart, &bCount); err != nil {
			t.Fatalf("bad hunk header %q: %v", hdr, err)
		}
		first := aStart - 1
		if aCount == 0 {
			first = aStart
		}
		if first < pos {
			t.Fatalf("hunk %q overlaps the previous one", hdr)
		}
		out = append(out, src[pos:first]...)
		pos = first
		i++
		seenA, seenB := 0, 0
		for i < len(lines) && lines[i] != "" && !strings.HasPrefix(lines[i], "@@") {
			l := lines[i]
			i++
			noEOL := i < len(lines) && lines[i] == "\\ No newline at end of file\n"
			if noEOL {
				i++
			}
			body := l[1:]
			if noEOL {
				body = strings.TrimSuffix(body, "\n")
			}
			switch l[0] {
			case ' ', '-':
				if pos >= len(src) || src[pos] != body {
					t.Fatalf("line %q does not match %q at %d", body, src[min(pos, len(src)-1)], pos)
				}
				pos++
				seenA++
				if l[0] == ' ' {
					out = append(out, body)
					seenB++
				}
			case '+':
				out = append(out, body)
				seenB++
			default:
				t.Fatalf("bad diff line %q", l)
			}
		}
		if seenA != aCount || seenB != bCount {
			t.Fatalf("hunk %q has %d/%d lines", hdr, seenA, seenB)
		}
	}
	out = append(out, src[pos:]...)
	return strings.Join(out, "")
}

// normalizeHeader spells out omitted ",1" counts.
func normalizeHeader(h string) string {
	f := strings.Fields(h)
	for i := 1; i <= 2; i++ {
		if !strings.Contains(f[i], ",") {
			f[i] += ",1"
		}
	}
	return strings.Join(f, " ") + "\n"
}
