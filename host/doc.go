// Package host is the agenthost library facade: it loads toolpack folders,
// maps each tool's requested securityContext through the operator's policy
// into an effective grant, and runs tool calls in a sandbox.
//
// A host application embeds it in a few lines:
//
//	h, err := host.New(ctx, host.Options{Dirs: []string{"toolpacks"}})
//	if err != nil { ... }
//	defer h.Close(ctx)
//	env := h.Call(ctx, "core:echo", json.RawMessage(`{"text":"hi"}`))
//	turn := h.Exec(ctx, llmOutput) // parse <ACTION>, run the calls, observation text
//
// Every call yields an [abi.Envelope]; a failing or hostile tool gives a
// failure envelope with one of the documented error codes and never takes the host
// down. See the package documentation of [github.com/agenthost/agenthost/abi]
// for the wire types and docs/ for the policy and ABI references.
package host

// The files follow the steps of a call. Apart from host.go, whose New
// wires them together, each uses only those listed before it:
//   - prepare.go: a tool's grant and prepared runner, built once under the
//     host's lifetime, freed once the tool has left the catalogue;
//   - load.go: the catalogue, loaded, swapped in one step and queried;
//   - call.go: one call (exec.go: a model's turn of calls);
//   - close.go: the end of the host and of the calls in flight.
