// Command goecho copies its stdin (the arguments JSON) to stdout: the Go
// guest of the per-call benchmarks. Build with GOOS=wasip1 GOARCH=wasm.
package main

import (
	"io"
	"os"
)

func main() {
	if _, err := io.Copy(os.Stdout, os.Stdin); err != nil {
		os.Exit(1)
	}
}
