// Command wasiecho is the benchmark's JSON echo as a wasi-command: the
// arguments on stdin, the result on stdout.
package main

import (
	"encoding/json"
	"io"
	"os"
)

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		os.Exit(1)
	}
	var v any
	if err := json.Unmarshal(in, &v); err != nil {
		os.Exit(1)
	}
	out, err := json.Marshal(v)
	if err != nil {
		os.Exit(1)
	}
	os.Stdout.Write(out)
}
