package workflow_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/workflow"
)

// ExampleWorkflow_Run parses a workflow and runs it with a call function
// of its own (a host passes its own call pipeline).
func ExampleWorkflow_Run() {
	w, err := workflow.Parse([]byte(`{
		"id": "greet", "description": "Greets someone.",
		"interfaceInputs": {"name": {"dataFlowType": "STRING", "required": true}},
		"interfaceOutputs": {"greeting": {"dataFlowType": "STRING"}},
		"nodes": [{"id": "say", "tool": "core:echo", "args": {"text": "Hello, ${inputs.name}!"}}],
		"outputs": {"greeting": "${nodes.say.output.text}"}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	echo := func(_ context.Context, tool string, args json.RawMessage) abi.Envelope {
		return abi.Envelope{ToolID: tool, Status: abi.StatusSuccess, Output: args}
	}
	out, aerr := w.Run(context.Background(), []byte(`{"name":"Ada"}`), echo)
	fmt.Println(string(out), aerr == nil)
	fmt.Println(string(w.Parameters()))
	// Output:
	// "Hello, Ada!" true
	// {"additionalProperties":false,"properties":{"name":{"type":"string"}},"required":["name"],"type":"object"}
}
