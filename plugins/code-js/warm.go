package main

import (
	"encoding/json"

	"github.com/agenthost/agenthost/plugins/internal/toolcall"
)

// warmProgram exercises what every program uses (the parser and
// compiler, an async function, a tool call and its JSON both ways, the
// console, the result's encoding), so that the state goja and
// encoding/json build on first use is in the start-up snapshot rather
// than rebuilt by every program.
const warmProgram = `const r = await tools.core.echo({n: 1, s: "x", a: [true, null], o: {k: 1.5}});
console.log("n", r.n);
let t = 0;
for (const k of Object.keys(r)) { t += k.length }
return {t, s: JSON.stringify(r), back: JSON.parse("{\"x\":[1]}")}`

// warm runs at start-up (main, before guest.Run): a program on a local
// echo, then the heap's headroom (toolcall.ReserveHeap).
func warm() {
	_, _ = Run(Input{Code: warmProgram, Input: json.RawMessage(`{"w":1}`)}, toolcall.Echo)
	toolcall.ReserveHeap(toolcall.Headroom)
}
