package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Input is the arguments object of text:stats.
type Input struct {
	Text             string `json:"text"`
	Top              *int   `json:"top,omitempty"`
	MinWordLength    int    `json:"minWordLength,omitempty"`
	ExcludeStopwords bool   `json:"excludeStopwords,omitempty"`
	CaseSensitive    bool   `json:"caseSensitive,omitempty"`
}

// Limits of the arguments.
const (
	defaultTop = 10
	maxTop     = 100
)

// Stats is the result of text:stats.
type Stats struct {
	Characters        int         `json:"characters"`
	Bytes             int         `json:"bytes"`
	Words             int         `json:"words"`
	UniqueWords       int         `json:"uniqueWords"`
	Lines             int         `json:"lines"`
	Sentences         int         `json:"sentences"`
	Paragraphs        int         `json:"paragraphs"`
	AvgWordLength     float64     `json:"avgWordLength"`
	AvgSentenceLength float64     `json:"avgSentenceLength"`
	TopWords          []WordCount `json:"topWords"`
}

// WordCount is one entry of Stats.TopWords.
type WordCount struct {
	Word  string `json:"word"`
	Count int    `json:"count"`
}

// Analyze computes the statistics of in.Text.
//
// A word is a run of letters, digits and marks, with inner apostrophes or
// hyphens ("don't", "well-known") and decimal points or separators between
// digits ("3.14", "1,000"). A sentence ends at '.', '!', '?' or
// '…' (repeats count once) followed by a space or the end; trailing words
// without a terminator form a last sentence. Paragraphs are separated by
// blank lines. Lines are counted like `wc -l`, plus one for a last line
// without a newline.
func Analyze(in Input) (Stats, error) {
	top := defaultTop
	if in.Top != nil {
		top = *in.Top
	}
	if top < 0 || top > maxTop {
		return Stats{}, fmt.Errorf("top must be between 0 and %d, got %d", maxTop, top)
	}
	if !utf8.ValidString(in.Text) {
		return Stats{}, fmt.Errorf("text is not valid UTF-8")
	}
	s := Stats{
		Characters: utf8.RuneCountInString(in.Text),
		Bytes:      len(in.Text),
		Lines:      countLines(in.Text),
		Sentences:  countSentences(in.Text),
		Paragraphs: countParagraphs(in.Text),
		TopWords:   []WordCount{},
	}
	words := splitWords(in.Text)
	s.Words = len(words)
	counts := map[string]int{}
	letters := 0
	for _, w := range words {
		letters += utf8.RuneCountInString(w)
		if !in.CaseSensitive {
			w = strings.ToLower(w)
		}
		counts[w]++
	}
	s.UniqueWords = len(counts)
	if s.Words > 0 {
		s.AvgWordLength = round2(float64(letters) / float64(s.Words))
	}
	if s.Sentences > 0 {
		s.AvgSentenceLength = round2(float64(s.Words) / float64(s.Sentences))
	}
	for w, n := range counts {
		if utf8.RuneCountInString(w) < in.MinWordLength {
			continue
		}
		if in.ExcludeStopwords && isStopword(strings.ToLower(w)) {
			continue
		}
		s.TopWords = append(s.TopWords, WordCount{Word: w, Count: n})
	}
	sort.Slice(s.TopWords, func(i, j int) bool {
		a, b := s.TopWords[i], s.TopWords[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Word < b.Word
	})
	if len(s.TopWords) > top {
		s.TopWords = s.TopWords[:top]
	}
	return s, nil
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// joins reports whether r, between prev and next, keeps one word going:
// an apostrophe or hyphen between word characters ("don't",
// "well-known"), or a decimal point or digit separator between digits
// ("3.14", "1,000").
func joins(prev, r, next rune) bool {
	switch r {
	case '\'', '’', '-':
		return isWordRune(next)
	case '.', ',':
		return unicode.IsDigit(prev) && unicode.IsDigit(next)
	}
	return false
}

// splitWords returns the words of s in order.
func splitWords(s string) []string {
	var words []string
	rs := []rune(s)
	for i := 0; i < len(rs); {
		if !isWordRune(rs[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(rs) {
			if isWordRune(rs[j]) {
				j++
				continue
			}
			if j+1 < len(rs) && joins(rs[j-1], rs[j], rs[j+1]) {
				j += 2
				continue
			}
			break
		}
		words = append(words, string(rs[i:j]))
		i = j
	}
	return words
}

func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

func isTerminator(r rune) bool { return r == '.' || r == '!' || r == '?' || r == '…' }

func countSentences(s string) int {
	n := 0
	open := false // a sentence has started (a word rune seen since the last end)
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case isWordRune(r):
			open = true
		case isTerminator(r) && open:
			next := i + 1
			for next < len(rs) && (isTerminator(rs[next]) || rs[next] == '"' || rs[next] == '\'' || rs[next] == ')' || rs[next] == '”' || rs[next] == '’') {
				next++
			}
			if next == len(rs) || unicode.IsSpace(rs[next]) {
				n++
				open = false
			}
		}
	}
	if open {
		n++
	}
	return n
}

func countParagraphs(s string) int {
	n := 0
	inPara := false
	for _, line := range strings.Split(s, "\n") {
		if strings.TrimSpace(line) == "" {
			inPara = false
			continue
		}
		if !inPara {
			n++
			inPara = true
		}
	}
	return n
}

// isStopword reports whether w (lower case) is a common English function
// word, left out of TopWords when ExcludeStopwords is set.
func isStopword(w string) bool {
	switch w {
	case "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be",
		"been", "but", "by", "can", "could", "did", "do", "does", "for", "from", "had", "has",
		"have", "he", "her", "his", "i", "if", "in", "into", "is", "it", "its", "it's", "me", "my",
		"no", "not", "of", "on", "or", "our", "she", "so", "than", "that", "the", "their", "them",
		"then", "there", "these", "they", "this", "those", "to", "up", "us", "was", "we", "were",
		"what", "when", "which", "who", "will", "with", "would", "you", "your":
		return true
	}
	return false
}
