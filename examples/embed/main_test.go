package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// TestMain_stdout runs the example from the repository root, where the
// toolpacks are (built by `make toolpacks`), and checks what it prints.
func TestMain_stdout(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir("../.."); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	if _, err := os.Stat("toolpacks/text/text-stats.wasm"); err != nil {
		t.Fatalf("toolpacks are not built (run `make toolpacks`): %v", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	main()
	os.Stdout = stdout
	w.Close()
	out, _ := io.ReadAll(r)
	for _, want := range []string{
		"Let me count the words, then hash the text.",
		"Observation: Tool text:stats executed successfully. Result: {",
		"Observation: Tool hash:digest executed successfully. Result: {",
		"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}
