package main

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEEmbedsThisProgram keeps the README's embedding program and
// this file identical, so the code a newcomer pastes is the code the tests
// build and run.
func TestREADMEEmbedsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```go\n"+string(src)+"```\n") {
		t.Fatal("README.md's embedding program differs from examples/embed/main.go: paste main.go into the README's ```go block")
	}
}
