package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/receipt"
)

// ExampleHost_Replay records a call's receipt (here in memory), then
// runs the call again from it in another host and compares the outputs.
func ExampleHost_Replay() {
	ctx := context.Background()
	mem := receipt.NewMemory(100)
	rec := receipt.NewRecorder(mem, receipt.RecorderOptions{})
	h, err := host.New(ctx, host.Options{Dirs: []string{toolpacks()}, Receipts: rec})
	if err != nil {
		fmt.Println(err)
		return
	}
	h.Call(ctx, "core:echo", json.RawMessage(`{"greeting":"hello"}`))
	_ = h.Close(ctx)
	_ = rec.Close(ctx) // writes the receipts
	again, err := host.New(ctx, host.Options{Dirs: []string{toolpacks()}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer again.Close(ctx)
	for r := range mem.Receipts("default") {
		got, err := again.Replay(ctx, r, host.ReplayOptions{})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(r.Tool, got.Match, string(got.Envelope.Output))
	}
	// Output:
	// core:echo true {"greeting":"hello"}
}

// TestReplayRunnerKinds: a receipt of a tool whose runner records nothing
// is not replayable, and the error says why for each kind; a receipt
// without recorded inputs or whose payloads do not match their digests
// is refused too.
func TestReplayRunnerKinds(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	args := []byte(`{}`)
	cases := []struct {
		name string
		r    receipt.Receipt
		why  string
	}{
		{"mcp", receipt.Receipt{Runner: "mcp", Tool: "mcp:github.search"}, "MCP tool runs in another server"},
		{"script", receipt.Receipt{Runner: "external-script", Tool: "py:x"}, "native interpreter"},
		{"native", receipt.Receipt{Runner: "service-method", Tool: "app:x"}, "native Go function"},
		{"workflow", receipt.Receipt{Runner: "workflow", Tool: "workflow:x"}, "replay the receipts of its steps"},
		{"extism", receipt.Receipt{Runner: "wasm:extism", Tool: "web:fetch"}, "Extism guest's host functions"},
		{"nothing recorded", receipt.Receipt{Runner: "wasm:wasi-command", Tool: "core:echo", Status: "failure", Code: "INVALID_ARGUMENTS"}, "recorded no inputs"},
		{"inputs tampered", receipt.Receipt{Runner: "wasm:wasi-command", Tool: "core:echo", Inputs: []byte(`{}`), InputsDigest: receipt.Digest([]byte(`{"x":1}`))}, "do not match its inputs digest"},
		{"arguments tampered", receipt.Receipt{Runner: "wasm:wasi-command", Tool: "core:echo", Inputs: []byte(`{}`), InputsDigest: receipt.Digest([]byte(`{}`)), Args: args, ArgsDigest: receipt.Digest([]byte(`{"a":1}`))}, "stored arguments do not match"},
		{"not a record", receipt.Receipt{Runner: "wasm:wasi-command", Tool: "core:echo", Inputs: []byte(`{}`), InputsDigest: receipt.Digest([]byte(`{}`)), Args: args, ArgsDigest: receipt.Digest(args)}, "not a replay record"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.Replay(context.Background(), &tc.r, host.ReplayOptions{})
			var re *host.ReplayError
			if !errors.As(err, &re) || re.Kind != host.ReplayNotReplayable || !strings.Contains(re.Message, tc.why) {
				t.Fatalf("got %v", err)
			}
		})
	}
}
