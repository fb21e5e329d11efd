package wasm_test

import (
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/runner/wasm"
)

// A code tool's ToolCaller answers the guest with Answer: a success is
// the kind byte and the output, a failure the kind byte and what the
// program may use of it.
func ExampleAnswer() {
	ok := wasm.Answer(abi.Envelope{ToolID: "core:echo", Status: abi.StatusSuccess, Output: json.RawMessage(`{"n":1}`)}, "")
	failed := wasm.Answer(abi.Failure("fs:read", abi.Errorf(abi.CodePermissionDenied, "denied: open /etc/passwd")), "Observation: Error - ...")
	fmt.Println(string(ok))
	fmt.Println(string(failed))
	// Output:
	// S{"n":1}
	// F{"toolId":"fs:read","code":"PERMISSION_DENIED","message":"denied: open /etc/passwd","observation":"Observation: Error - ..."}
}
