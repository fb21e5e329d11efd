package main

import (
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/abi/guest"
)

// Modes of text:regex.
const (
	ModeMatch   = "match"
	ModeFind    = "find"
	ModeReplace = "replace"
	ModeSplit   = "split"
)

// Limits of the arguments.
const (
	defaultLimit     = 1000
	maxLimit         = 100000
	maxPatternLength = 4096
)

// Input is the arguments object of text:regex.
type Input struct {
	Pattern         string  `json:"pattern"`
	Text            string  `json:"text"`
	Mode            string  `json:"mode,omitempty"`
	Replacement     *string `json:"replacement,omitempty"`
	Literal         bool    `json:"literal,omitempty"`
	CaseInsensitive bool    `json:"caseInsensitive,omitempty"`
	Multiline       bool    `json:"multiline,omitempty"`
	DotAll          bool    `json:"dotAll,omitempty"`
	Limit           *int    `json:"limit,omitempty"`
}

// Output is the result of text:regex. Which fields are set depends on the
// mode: Matched and Count always; Matches for find; Result and Count (of
// replacements) for replace; Parts for split.
type Output struct {
	Mode      string   `json:"mode"`
	Matched   bool     `json:"matched"`
	Count     int      `json:"count"`
	Truncated bool     `json:"truncated"`
	Matches   []Match  `json:"matches,omitempty"`
	Result    *string  `json:"result,omitempty"`
	Parts     []string `json:"parts,omitempty"`
}

// Match is one match of find mode. Start and End are character (not byte)
// offsets into the text; End is exclusive. Groups holds the numbered
// capture groups (null when a group did not take part), Named the named
// ones.
type Match struct {
	Text   string             `json:"text"`
	Start  int                `json:"start"`
	End    int                `json:"end"`
	Groups []*string          `json:"groups,omitempty"`
	Named  map[string]*string `json:"named,omitempty"`
}

// Apply runs the regular expression of in over in.Text.
func Apply(in Input) (Output, error) {
	mode := in.Mode
	if mode == "" {
		mode = ModeFind
	}
	limit := defaultLimit
	if in.Limit != nil {
		limit = *in.Limit
	}
	if limit < 1 || limit > maxLimit {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "limit must be between 1 and %d, got %d", maxLimit, limit)
	}
	if len(in.Pattern) > maxPatternLength {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "pattern is %d bytes; the maximum is %d", len(in.Pattern), maxPatternLength)
	}
	if in.Replacement != nil && mode != ModeReplace {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "replacement is only used with mode replace, not %s", mode)
	}
	re, err := compile(in)
	if err != nil {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "invalid pattern: %s", err.Error())
	}
	out := Output{Mode: mode}
	switch mode {
	case ModeMatch:
		out.Matched = re.MatchString(in.Text)
		if out.Matched {
			out.Count = 1
		}
	case ModeFind:
		out.Matches, out.Truncated = find(re, in.Text, limit)
		out.Count = len(out.Matches)
		out.Matched = out.Count > 0
	case ModeReplace:
		if in.Replacement == nil {
			return Output{}, guest.Errorf(abi.CodeInvalidArguments, "mode replace needs a replacement (use \"\" to delete matches)")
		}
		res, n, truncated := replace(re, in.Text, *in.Replacement, in.Literal, limit)
		out.Result, out.Count, out.Truncated, out.Matched = &res, n, truncated, n > 0
	case ModeSplit:
		parts := re.Split(in.Text, limit+1)
		if len(parts) > limit {
			parts, out.Truncated = parts[:limit], true
		}
		out.Parts = parts
		out.Count = len(parts)
		out.Matched = len(parts) > 1
	default:
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "unknown mode %q (want match, find, replace or split)", mode)
	}
	return out, nil
}

// compile builds the expression with the requested flags.
func compile(in Input) (*regexp.Regexp, error) {
	pat := in.Pattern
	if in.Literal {
		pat = regexp.QuoteMeta(pat)
	}
	flags := ""
	if in.CaseInsensitive {
		flags += "i"
	}
	if in.Multiline {
		flags += "m"
	}
	if in.DotAll {
		flags += "s"
	}
	if flags != "" {
		pat = "(?" + flags + ")" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	return re, nil
}

// find returns up to limit matches and whether more exist.
func find(re *regexp.Regexp, text string, limit int) ([]Match, bool) {
	locs := re.FindAllStringSubmatchIndex(text, limit+1)
	truncated := len(locs) > limit
	if truncated {
		locs = locs[:limit]
	}
	names := re.SubexpNames()
	off := runeOffsets{text: text}
	matches := make([]Match, 0, len(locs))
	for _, loc := range locs {
		m := Match{Text: text[loc[0]:loc[1]], Start: off.at(loc[0]), End: off.at(loc[1])}
		for g := 1; g < len(loc)/2; g++ {
			var v *string
			if loc[2*g] >= 0 {
				s := text[loc[2*g]:loc[2*g+1]]
				v = &s
			}
			m.Groups = append(m.Groups, v)
			if names[g] != "" {
				if m.Named == nil {
					m.Named = map[string]*string{}
				}
				m.Named[names[g]] = v
			}
		}
		matches = append(matches, m)
	}
	return matches, truncated
}

// replace replaces the first limit matches. Unless literal is set, $1,
// ${1} and ${name} in repl expand to groups ($$ is a literal $).
func replace(re *regexp.Regexp, text, repl string, literal bool, limit int) (string, int, bool) {
	locs := re.FindAllStringSubmatchIndex(text, limit+1)
	truncated := len(locs) > limit
	if truncated {
		locs = locs[:limit]
	}
	var out []byte
	last := 0
	for _, loc := range locs {
		out = append(out, text[last:loc[0]]...)
		if literal {
			out = append(out, repl...)
		} else {
			out = re.ExpandString(out, repl, text, loc)
		}
		last = loc[1]
	}
	out = append(out, text[last:]...)
	return string(out), len(locs), truncated
}

// runeOffsets converts increasing byte offsets to character offsets.
type runeOffsets struct {
	text  string
	byteN int
	runeN int
}

func (r *runeOffsets) at(b int) int {
	if b < r.byteN {
		r.byteN, r.runeN = 0, 0
	}
	r.runeN += utf8.RuneCountInString(r.text[r.byteN:b])
	r.byteN = b
	return r.runeN
}
