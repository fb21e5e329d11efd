package main

import (
	"encoding/json"

	"github.com/agenthost/agenthost/plugins/internal/toolcall"
)

// warmProgram exercises what every program uses (the parser and
// resolver, a tool call and its JSON both ways, print, the result's
// encoding), so that the state Starlark and encoding/json build on first
// use is in the start-up snapshot rather than rebuilt by every program.
const warmProgram = `r = tools.core.echo(n = 1, s = "x", a = [True, None], o = {"k": 1.5})
print("n", r["n"])
t = 0
for k in r:
    t += len(k)
result = {"t": t, "s": json.encode(r), "back": json.decode('{"x": [1]}')}`

// warm runs at start-up (main, before guest.Run): a program on a local
// echo, then the heap's headroom (toolcall.ReserveHeap).
func warm() {
	_, _ = Run(Input{Code: warmProgram, Input: json.RawMessage(`{"w":1}`)}, Options{Call: toolcall.Echo})
	toolcall.ReserveHeap(toolcall.Headroom)
}
