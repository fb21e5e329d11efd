package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// TestMain_stdout runs the example from the repository root and checks
// that both Go tools and the WASM tool answered.
func TestMain_stdout(t *testing.T) {
	wd, _ := os.Getwd()
	if err := os.Chdir("../.."); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
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
		`Observation: Tool clock:now executed successfully. Result: {"zone":"UTC","utcOffset":"+00:00"}`,
		`Observation: Tool notes:count executed successfully. Result: {"files":`,
		`Observation: Tool text:stats executed successfully.`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), `{"files":0}`) {
		t.Errorf("notes:count found no README under examples/:\n%s", out)
	}
}
