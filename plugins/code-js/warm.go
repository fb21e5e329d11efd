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

// next is the runtime of the next program, made at start-up (Run takes
// it once). goja builds its built-in objects on first use (Promise and
// the async machinery, JSON, Object, Array); made before the snapshot,
// they are built once, and since every call starts from the snapshot's
// memory, every program gets this runtime as it was made, never as
// another program left it.
var next *program

// prime builds the built-ins every program uses, leaving no global
// behind: an async function that awaits, JSON both ways, an array and
// an object.
const prime = `(async function () { await null; JSON.parse(JSON.stringify({a: [1], b: Object.keys({c: 1})})) })()`

// warm runs at start-up (main, before guest.Run): a program on a local
// echo, then the heap's headroom (toolcall.ReserveHeap), then the next
// program's runtime.
func warm() {
	_, _ = Run(Input{Code: warmProgram, Input: json.RawMessage(`{"w":1}`)}, toolcall.Echo)
	toolcall.ReserveHeap(toolcall.Headroom)
	p, err := newProgram()
	if err != nil {
		return // each program makes its own
	}
	if _, err := p.vm.RunString(prime); err != nil {
		return
	}
	next = p
}
