// Package toolcalltest has what the code-mode guests' tests share: a
// caller that stands in for the host's tool calls when a program runs
// natively, outside WebAssembly.
package toolcalltest

import (
	"encoding/json"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/plugins/internal/toolcall"
)

// Echo answers every call with its arguments as the output, except the
// tool "x:fail", which fails with PERMISSION_DENIED and an observation.
func Echo(tool string, args []byte) (toolcall.Response, error) {
	if tool == "x:fail" {
		return toolcall.Response{Envelope: abi.Failure(tool, abi.Errorf(abi.CodePermissionDenied, "no")), Observation: "Observation: Error - denied"}, nil
	}
	return toolcall.Response{Envelope: abi.Envelope{ToolID: tool, Status: abi.StatusSuccess, Output: json.RawMessage(args)}}, nil
}
