package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/agenthost/agenthost/abi"
)

// ExampleResult is the outcome of running one manifest example.
type ExampleResult struct {
	// ToolID and Version name the tool; Index is the example's position in
	// the manifest (0-based) and Description its description.
	ToolID      string `json:"toolId"`
	Version     string `json:"version"`
	Index       int    `json:"index"`
	Description string `json:"description"`
	// Passed is true when the call succeeded and, if the example has an
	// expectedOutput, the output equals it as JSON (key order and number
	// spelling aside).
	Passed bool `json:"passed"`
	// Reason says why it failed; empty when Passed.
	Reason string `json:"reason,omitempty"`
	// Envelope is the call's result.
	Envelope abi.Envelope `json:"envelope"`
}

// RunExamples calls the tool id ("id" or "id@version") once per example of
// its manifest, in order, and compares each output with the example's
// expectedOutput when it has one. An unknown or broken tool is an error.
func (h *Host) RunExamples(ctx context.Context, id string) ([]ExampleResult, error) {
	t, err := h.Tool(id)
	if err != nil {
		return nil, err
	}
	out := make([]ExampleResult, 0, len(t.Examples))
	for i, ex := range t.Examples {
		env := h.Call(ctx, t.ToolID+"@"+t.Version, ex.Input)
		r := ExampleResult{ToolID: t.ToolID, Version: t.Version, Index: i, Description: ex.Description, Envelope: env}
		switch {
		case env.Status != abi.StatusSuccess:
			r.Reason = fmt.Sprintf("the call failed: %s", env.Error)
		case len(bytes.TrimSpace(ex.ExpectedOutput)) > 0 && !sameJSON(env.Output, ex.ExpectedOutput):
			r.Reason = fmt.Sprintf("output %s, expected %s", compact(env.Output), compact(ex.ExpectedOutput))
		default:
			r.Passed = true
		}
		out = append(out, r)
	}
	return out, nil
}

// sameJSON reports whether a and b hold equal JSON values.
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func compact(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}
