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
