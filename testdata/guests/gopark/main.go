// Command gopark is the guest of the parked-command tests: a plain Go
// command (no guest SDK) that keeps state in package variables. Each run
// prints {"calls":n,"previous":p,"input":i,"startup":s}: how many times
// main's body ran in this process, the input of the previous run in this
// process (it is remembered after printing), this run's input and what
// the start-up did. A fresh process always prints calls 1 and previous
// "". PARK_MODE chooses what happens before stdin is read: "log" writes
// a line to stderr, "open" reads /tool/README.md, "clock" reads the
// time; anything else does nothing. Build with GOOS=wasip1 GOARCH=wasm.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

var (
	calls    int
	previous string
)

func main() {
	startup := ""
	switch os.Getenv("PARK_MODE") {
	case "log":
		fmt.Fprintln(os.Stderr, "starting")
		startup = "logged"
	case "open":
		b, err := os.ReadFile("/tool/README.md")
		startup = fmt.Sprintf("read %d bytes (%v)", len(b), err)
	case "clock":
		startup = time.Now().UTC().Format(time.RFC3339Nano)
	}
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "read stdin:", err)
		os.Exit(1)
	}
	calls++
	out, _ := json.Marshal(map[string]any{"calls": calls, "previous": previous, "input": string(in), "startup": startup})
	os.Stdout.Write(out)
	previous = string(in)
}
