// Package toolcall is the guest side of the host import that lets a
// code-mode guest (code:starlark, code:js) call a tool: one function,
// agenthost_tools.call, that takes a tool ID (or wire name) and its JSON
// arguments and answers with the call's envelope. The host runs the call
// under the grant and tool inventory of whoever called the code tool;
// the guest itself has no other way out.
package toolcall

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/abi"
)

// Response is the host's answer to one inner call.
type Response struct {
	// Envelope is the inner call's result envelope, as host.Call returns
	// it.
	Envelope abi.Envelope `json:"envelope"`
	// Observation is the text the model would read for a failed call
	// (what went wrong and what to do); empty on success.
	Observation string `json:"observation,omitempty"`
}

// Caller makes one inner call; [Call] is the one a guest uses, tests pass
// their own.
type Caller func(tool string, args []byte) (Response, error)

// Error is a failed inner call, as a Go error a guest's interpreter can
// raise. Its message names the tool, the code and the observation, so a
// program that does not handle it still tells the model what to do.
type Error struct {
	Tool        string
	Code        abi.Code
	Message     string
	Observation string
}

func (e *Error) Error() string {
	text := e.Observation
	if text == "" {
		text = e.Message
	}
	return fmt.Sprintf("%s failed with %s: %s", e.Tool, e.Code, text)
}

// Result returns the output of a successful response, or an *Error for a
// failed one.
func (r Response) Result(tool string) (json.RawMessage, error) {
	env := r.Envelope
	if env.Error != nil || env.Status == abi.StatusFailure {
		e := &Error{Tool: tool, Code: abi.CodeToolError, Observation: r.Observation}
		if env.Error != nil {
			e.Code, e.Message = env.Error.Code, env.Error.Message
		}
		if env.ToolID != "" {
			e.Tool = env.ToolID
		}
		return nil, e
	}
	if len(env.Output) == 0 {
		return json.RawMessage("null"), nil
	}
	return env.Output, nil
}

// decode reads the host's answer (host/runner/wasm Answer): the kind
// byte 'S' and the tool's output JSON, or 'F' and the failure as JSON.
// b is the shared answer buffer: the output is copied out of it.
func decode(b []byte) (Response, error) {
	if len(b) == 0 {
		return Response{}, errors.New("agenthost_tools.call answered with nothing")
	}
	switch b[0] {
	case 'S':
		out := make(json.RawMessage, len(b)-1)
		copy(out, b[1:])
		return Response{Envelope: abi.Envelope{Status: abi.StatusSuccess, Output: out}}, nil
	case 'F':
		var f struct {
			ToolID      string   `json:"toolId"`
			Code        abi.Code `json:"code"`
			Message     string   `json:"message"`
			Observation string   `json:"observation"`
		}
		if err := json.Unmarshal(b[1:], &f); err != nil {
			return Response{}, fmt.Errorf("agenthost_tools.call answered with a bad failure: %w", err)
		}
		return Response{Envelope: abi.Failure(f.ToolID, abi.Errorf(f.Code, "%s", f.Message)), Observation: f.Observation}, nil
	}
	return Response{}, fmt.Errorf("agenthost_tools.call answered with the unknown kind %q", b[0])
}
