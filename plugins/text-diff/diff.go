package main

import (
	"strings"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/abi/guest"
	"github.com/agenthost/agenthost/internal/unidiff"
)

// Limits of the arguments and of the comparison.
const (
	defaultContext = 3
	maxContext     = 1000
	// maxEdits bounds the edit distance (lines added plus removed, after
	// the common head and tail are set aside); the algorithm's memory
	// grows with its square (2000 edits: 16 MB).
	maxEdits = 2000
)

// Input is the arguments object of text:diff.
type Input struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Context   *int   `json:"context,omitempty"`
	FromLabel string `json:"fromLabel,omitempty"`
	ToLabel   string `json:"toLabel,omitempty"`
}

// Output is the result of text:diff. Diff is empty when the texts are
// identical.
type Output struct {
	Identical bool   `json:"identical"`
	Added     int    `json:"added"`
	Removed   int    `json:"removed"`
	Hunks     int    `json:"hunks"`
	Diff      string `json:"diff"`
}

// Diff compares in.From and in.To line by line and returns a unified diff
// with in.Context lines of context (default 3). Lines are compared
// exactly, including their line terminator, so a last line without a
// newline differs from the same line with one ("\ No newline at end of
// file" is written as diff does).
func Diff(in Input) (Output, error) {
	ctxLines := defaultContext
	if in.Context != nil {
		ctxLines = *in.Context
	}
	if ctxLines < 0 || ctxLines > maxContext {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "context must be between 0 and %d, got %d", maxContext, ctxLines)
	}
	fromLabel, toLabel := in.FromLabel, in.ToLabel
	if fromLabel == "" {
		fromLabel = "a"
	}
	if toLabel == "" {
		toLabel = "b"
	}
	if strings.ContainsAny(fromLabel+toLabel, "\r\n") {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "labels must be one line")
	}
	res, ok := unidiff.Unified(in.From, in.To, fromLabel, toLabel, ctxLines, maxEdits)
	if !ok {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "the texts differ in more than %d lines; compare smaller pieces", maxEdits)
	}
	return Output{Identical: res.Identical, Added: res.Added, Removed: res.Removed, Hunks: res.Hunks, Diff: res.Diff}, nil
}
