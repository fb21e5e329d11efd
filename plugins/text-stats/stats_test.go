package main

import (
	"reflect"
	"strings"
	"testing"
)

func intp(n int) *int { return &n }

func TestAnalyzeCounts(t *testing.T) {
	tests := []struct {
		name                                              string
		text                                              string
		chars, bytes, words, lines, sentences, paragraphs int
	}{
		{"empty", "", 0, 0, 0, 0, 0, 0},
		{"spaces only", "  \n\t ", 5, 5, 0, 2, 0, 0},
		{"one word", "hello", 5, 5, 1, 1, 1, 1},
		{"trailing newline", "hello\n", 6, 6, 1, 1, 1, 1},
		{"two lines no final newline", "a\nb", 3, 3, 2, 2, 1, 1},
		{"contractions and hyphens", "Don't re-run well-known tests.", 30, 30, 4, 1, 1, 1},
		{"ellipsis and repeats", "Wait... what?! Yes.", 19, 19, 3, 1, 3, 1},
		{"decimal is not a sentence end", "Pi is 3.14 today.", 17, 17, 4, 1, 1, 1},
		{"quote after terminator", `He said "go." Then left.`, 24, 24, 5, 1, 2, 1},
		{"unterminated last sentence", "One. Two", 8, 8, 2, 1, 2, 1},
		{"terminators without words", "?! ...", 6, 6, 0, 1, 0, 1},
		{"paragraphs", "p1 line\nstill p1\n\n \np2\n\n\np3", 27, 27, 6, 8, 1, 3},
		{"unicode", "Größe ändern. 日本語", 17, 26, 3, 1, 2, 1},
		{"combining mark stays in word", "cafe\u0301 ok", 8, 9, 2, 1, 1, 1},
		{"trailing joiner not part of word", "rock- and 'roll'", 16, 16, 3, 1, 1, 1},
		{"number separators", "1,000 items, 2.5 each, v1.2", 27, 27, 5, 1, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Analyze(Input{Text: tc.text})
			if err != nil {
				t.Fatal(err)
			}
			got := []int{s.Characters, s.Bytes, s.Words, s.Lines, s.Sentences, s.Paragraphs}
			want := []int{tc.chars, tc.bytes, tc.words, tc.lines, tc.sentences, tc.paragraphs}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("chars,bytes,words,lines,sentences,paragraphs = %v, want %v", got, want)
			}
		})
	}
}

func TestAnalyzeTopWords(t *testing.T) {
	text := "The the THE cat. A cat, a dog; the Dog's dog."
	tests := []struct {
		name string
		in   Input
		want []WordCount
	}{
		{"default folds case", Input{Text: text, Top: intp(3)}, []WordCount{{"the", 4}, {"a", 2}, {"cat", 2}}},
		{"case sensitive", Input{Text: text, Top: intp(2), CaseSensitive: true}, []WordCount{{"cat", 2}, {"dog", 2}}},
		{"stopwords", Input{Text: text, Top: intp(5), ExcludeStopwords: true}, []WordCount{{"cat", 2}, {"dog", 2}, {"dog's", 1}}},
		{"stopwords case sensitive", Input{Text: text, Top: intp(1), ExcludeStopwords: true, CaseSensitive: true}, []WordCount{{"cat", 2}}},
		{"min length", Input{Text: text, MinWordLength: 4}, []WordCount{{"dog's", 1}}},
		{"top zero", Input{Text: text, Top: intp(0)}, []WordCount{}},
		{"no words", Input{Text: "..."}, []WordCount{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Analyze(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.TopWords, tc.want) {
				t.Errorf("TopWords = %v, want %v", s.TopWords, tc.want)
			}
		})
	}
}

func TestAnalyzeAverages(t *testing.T) {
	s, err := Analyze(Input{Text: "ab abcd. abc!"})
	if err != nil {
		t.Fatal(err)
	}
	if s.AvgWordLength != 3 || s.AvgSentenceLength != 1.5 || s.UniqueWords != 3 {
		t.Errorf("avgWord %v avgSentence %v unique %d, want 3 1.5 3", s.AvgWordLength, s.AvgSentenceLength, s.UniqueWords)
	}
	s, err = Analyze(Input{Text: "a bb bb"})
	if err != nil {
		t.Fatal(err)
	}
	if s.AvgWordLength != 1.67 {
		t.Errorf("avgWordLength = %v, want 1.67 (rounded)", s.AvgWordLength)
	}
}

func TestAnalyzeRejects(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want string
	}{
		{"negative top", Input{Text: "x", Top: intp(-1)}, "top must be between"},
		{"huge top", Input{Text: "x", Top: intp(101)}, "top must be between"},
		{"invalid utf-8", Input{Text: "ok \xff"}, "not valid UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Analyze(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
