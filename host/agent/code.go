package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/observation"
)

// Code mode: the model sees one tool, run_code, and the tools of the run
// as a typed API in the system prompt; a program calls them as
// functions (host.RunCode), and every call it makes is a step of the
// run whose ParentCallID is the run_code call's.

// codeDef is code mode's one tool.
func codeDef() llm.ToolDef {
	return llm.ToolDef{
		Name: host.RunCodeName,
		Description: "Runs a program (JavaScript by default, or Starlark) in which every tool listed in the system prompt is a function, and returns " +
			"{result, log, calls}: what the program returned, its console lines and how many tool calls it made. " +
			"Do the whole task in one program when you can: loop, filter and aggregate inside it and return only the answer.",
		Parameters: host.RunCodeSchema(),
	}
}

// codeAPI renders the typed API of the run's tools for the system prompt.
func (r *run) codeAPI() error {
	text, err := r.h.CodeAPIText(host.CodeAPIOptions{Allowed: r.inRun})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	r.api = text
	return nil
}

// inRun reports whether the model of this run may use tool id.
func (r *run) inRun(id string) bool { return r.byID[id] != nil }

// runCode runs one run_code call: the record of the call, the text the
// model sees, and the records of the program's inner calls in the order
// made.
func (r *run) runCode(ctx context.Context, tc llm.ToolCall) (ToolAgentOutput, string, []ToolAgentOutput) {
	args := json.RawMessage(tc.Arguments)
	if len(strings.TrimSpace(tc.Arguments)) == 0 {
		args = json.RawMessage(`{}`)
	}
	start := time.Now()
	r.event(Event{Kind: "tool_start", Tool: tc.Name, CallID: tc.ID, Args: args})
	var inner []ToolAgentOutput // guarded by innerMu: the steps arrive on the guest's side
	var innerMu sync.Mutex
	var env abi.Envelope
	r.mu.Lock()
	prev, failed := r.ec.failedBefore(host.RunCodeName, args)
	r.mu.Unlock()
	switch {
	case tc.Name != host.RunCodeName:
		env = abi.Failure(tc.Name, abi.Errorf(abi.CodeUnknownTool, "unknown tool '%s'; the only tool is %s: write a program that calls the tools of the system prompt as functions", tc.Name, host.RunCodeName))
	case !json.Valid(args):
		env = abi.Failure(host.RunCodeName, abi.Errorf(abi.CodeInvalidArguments, "the arguments are not valid JSON: %s", snippet(tc.Arguments)))
	case failed:
		env = abi.Failure(host.RunCodeName, abi.Errorf(prev, "this exact program already failed with %s; it was not run again. Fix the program", prev))
	default:
		scope := host.CodeScope{Allowed: r.inRun, Step: func(s host.CodeStep) {
			r.mu.Lock()
			id := r.newCallID()
			r.mu.Unlock()
			name := s.Envelope.ToolID
			if name == "" {
				name = s.Name
			}
			out := stepOf(name, id, s.Args, s.Envelope)
			out.ParentCallID = tc.ID
			out.UIHints = uiHints(r.byID[name], s.Envelope)
			innerMu.Lock()
			inner = append(inner, out)
			innerMu.Unlock()
			r.event(Event{Kind: "code_step", Tool: name, CallID: id, Args: s.Args, Status: string(s.Envelope.Status),
				Duration: time.Duration(s.Envelope.DurationMs * float64(time.Millisecond)), Step: &out})
		}}
		env = r.h.RunCode(host.WithCallID(ctx, tc.ID), args, scope)
	}
	innerMu.Lock()
	defer innerMu.Unlock()
	out := stepOf(tc.Name, tc.ID, args, env)
	r.event(Event{Kind: "tool", Tool: tc.Name, CallID: tc.ID, Status: string(env.Status), Duration: time.Since(start), Step: &out})
	r.mu.Lock()
	defer r.mu.Unlock()
	if tc.Name == host.RunCodeName {
		r.ec.record(host.RunCodeName, args, env)
	}
	text := string(env.Output)
	if env.Error != nil {
		text = observation.Error(tc.Name, env.Error)
	}
	r.ec.observe(text)
	return out, text, inner
}
