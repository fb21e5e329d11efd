package main

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
)

func strp(s string) *string { return &s }
func intp(n int) *int       { return &n }

func TestApply(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want Output
	}{
		{"match yes", Input{Pattern: `^\d+$`, Text: "123", Mode: "match"},
			Output{Mode: "match", Matched: true, Count: 1}},
		{"match no", Input{Pattern: `^\d+$`, Text: "12a", Mode: "match"},
			Output{Mode: "match"}},
		{"find default mode, rune offsets", Input{Pattern: `é+`, Text: "caféé: été"},
			Output{Mode: "find", Matched: true, Count: 3, Matches: []Match{
				{Text: "éé", Start: 3, End: 5}, {Text: "é", Start: 7, End: 8}, {Text: "é", Start: 9, End: 10}}}},
		{"find groups, unmatched group is null", Input{Pattern: `(a)|(b)`, Text: "b"},
			Output{Mode: "find", Matched: true, Count: 1, Matches: []Match{
				{Text: "b", Start: 0, End: 1, Groups: []*string{nil, strp("b")}}}}},
		{"find named", Input{Pattern: `(?P<k>\w+)=(?P<v>\w*)`, Text: "a=1 b="},
			Output{Mode: "find", Matched: true, Count: 2, Matches: []Match{
				{Text: "a=1", Start: 0, End: 3, Groups: []*string{strp("a"), strp("1")}, Named: map[string]*string{"k": strp("a"), "v": strp("1")}},
				{Text: "b=", Start: 4, End: 6, Groups: []*string{strp("b"), strp("")}, Named: map[string]*string{"k": strp("b"), "v": strp("")}}}}},
		{"find limit truncates", Input{Pattern: `\d`, Text: "1 2 3", Limit: intp(2)},
			Output{Mode: "find", Matched: true, Count: 2, Truncated: true, Matches: []Match{
				{Text: "1", Start: 0, End: 1}, {Text: "2", Start: 2, End: 3}}}},
		{"find limit exact is not truncated", Input{Pattern: `\d`, Text: "1 2", Limit: intp(2)},
			Output{Mode: "find", Matched: true, Count: 2, Matches: []Match{
				{Text: "1", Start: 0, End: 1}, {Text: "2", Start: 2, End: 3}}}},
		{"find none", Input{Pattern: `x`, Text: "abc"},
			Output{Mode: "find", Matches: []Match{}}},
		{"flags", Input{Pattern: `^b.c$`, Text: "a\nB\nC", CaseInsensitive: true, Multiline: true, DotAll: true},
			Output{Mode: "find", Matched: true, Count: 1, Matches: []Match{{Text: "B\nC", Start: 2, End: 5}}}},
		{"literal pattern", Input{Pattern: `a.b`, Text: "axb a.b", Literal: true},
			Output{Mode: "find", Matched: true, Count: 1, Matches: []Match{{Text: "a.b", Start: 4, End: 7}}}},
		{"replace expands groups", Input{Pattern: `(?P<w>\w+)@(\w+)`, Text: "ann@x bo@y", Mode: "replace", Replacement: strp("${w} at $2 $$")},
			Output{Mode: "replace", Matched: true, Count: 2, Result: strp("ann at x $ bo at y $")}},
		{"replace literal keeps $", Input{Pattern: `$`, Text: "cost: 5$", Mode: "replace", Replacement: strp("$1"), Literal: true},
			Output{Mode: "replace", Matched: true, Count: 1, Result: strp("cost: 5$1")}},
		{"replace with limit", Input{Pattern: `o`, Text: "foo boo", Mode: "replace", Replacement: strp("0"), Limit: intp(3)},
			Output{Mode: "replace", Matched: true, Count: 3, Truncated: true, Result: strp("f00 b0o")}},
		{"replace no match", Input{Pattern: `z`, Text: "abc", Mode: "replace", Replacement: strp("")},
			Output{Mode: "replace", Result: strp("abc")}},
		{"replace empty matches", Input{Pattern: `x*`, Text: "ab", Mode: "replace", Replacement: strp("-")},
			Output{Mode: "replace", Matched: true, Count: 3, Result: strp("-a-b-")}},
		{"split", Input{Pattern: `\s*,\s*`, Text: "a , b,c", Mode: "split"},
			Output{Mode: "split", Matched: true, Count: 3, Parts: []string{"a", "b", "c"}}},
		{"split limit", Input{Pattern: `,`, Text: "a,b,c,d", Mode: "split", Limit: intp(2)},
			Output{Mode: "split", Matched: true, Count: 2, Truncated: true, Parts: []string{"a", "b"}}},
		{"split no match", Input{Pattern: `,`, Text: "abc", Mode: "split"},
			Output{Mode: "split", Count: 1, Parts: []string{"abc"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Apply(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Apply =\n %+v\nwant\n %+v", got, tc.want)
			}
		})
	}
}

func TestApplyRejects(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want string
	}{
		{"bad pattern", Input{Pattern: `(`, Text: "x"}, "invalid pattern"},
		{"backreference is not RE2", Input{Pattern: `(a)\1`, Text: "aa"}, "invalid pattern"},
		{"lookahead is not RE2", Input{Pattern: `a(?=b)`, Text: "ab"}, "invalid pattern"},
		{"long pattern", Input{Pattern: strings.Repeat("a", maxPatternLength+1), Text: "x"}, "maximum is 4096"},
		{"unknown mode", Input{Pattern: `a`, Text: "a", Mode: "grep"}, "unknown mode"},
		{"replace without replacement", Input{Pattern: `a`, Text: "a", Mode: "replace"}, "needs a replacement"},
		{"replacement in find", Input{Pattern: `a`, Text: "a", Replacement: strp("b")}, "only used with mode replace"},
		{"zero limit", Input{Pattern: `a`, Text: "a", Limit: intp(0)}, "limit must be between"},
		{"huge limit", Input{Pattern: `a`, Text: "a", Limit: intp(maxLimit + 1)}, "limit must be between"},
		{"huge repeat", Input{Pattern: `a{1001}`, Text: "a"}, "invalid pattern"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Apply(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if !errors.Is(err, abi.ErrInvalidArguments) {
				t.Errorf("err = %v, want code INVALID_ARGUMENTS", err)
			}
		})
	}
}

func TestRuneOffsetsRewind(t *testing.T) {
	r := runeOffsets{text: "ééx"}
	if got := r.at(4); got != 2 {
		t.Errorf("at(4) = %d, want 2", got)
	}
	if got := r.at(2); got != 1 {
		t.Errorf("at(2) after at(4) = %d, want 1", got)
	}
}
