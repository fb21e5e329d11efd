package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/agenthost/agenthost/abi"
)

// Tools as functions: one host import lets a guest (the code-mode tools
// code:starlark and code:js) call a tool by ID or wire name with JSON
// arguments and read back its envelope. The runner only moves the bytes:
// who may call what, and the budgets of the whole program, belong to the
// ToolCaller the host puts in the call's context (the runner never
// imports the host), so a guest run without one can call nothing.
const (
	// ToolModule and ToolFunc name the import:
	//
	//	call(tool, toolLen, args, argsLen, out, outCap i32) i64
	//
	// It runs the tool named by the bytes tool[:toolLen] with the JSON
	// arguments args[:argsLen] and returns the length n of its answer
	// (see Answer). If n <= outCap the answer is in out[:n]; otherwise
	// nothing is written and the runner keeps the answer for the next
	// call with toolLen 0, which must pass a buffer of at least n bytes
	// (the guest grows its buffer once, without running the tool twice).
	ToolModule = "agenthost_tools"
	ToolFunc   = "call"
	// maxToolName caps the tool name a guest passes.
	maxToolName = 1024
)

// ToolCaller makes one inner call for a guest. tool is what the guest
// named (an ID or a wire name), args its JSON arguments (a copy the
// caller may keep). It returns the answer the guest reads, or stop: a
// limit of the whole program (too many calls, too much output), which
// ends the guest at once with that error as the call's result, whatever
// the guest would have made of a failure.
//
// ctx is the guest call's context: it ends when the call's deadline
// passes or the call is stopped, so an inner call should end with it.
// Its values are the runner's own, for the running guest; an inner call
// takes its values from the context the ToolCaller was made for.
type ToolCaller func(ctx context.Context, tool string, args []byte) (answer []byte, stop *abi.Error)

type toolSessionKey struct{}

// toolSession is one call's link to its ToolCaller, plus the answer
// held for a guest whose buffer was too small.
type toolSession struct {
	call    ToolCaller
	pending []byte
}

// WithToolCaller returns ctx carrying c: a guest run by Prepared.Run
// under it (and only such a guest) may call tools through the import.
// Use a fresh context per call: the session holds the call's state.
func WithToolCaller(ctx context.Context, c ToolCaller) context.Context {
	return context.WithValue(ctx, toolSessionKey{}, &toolSession{call: c})
}

// toolStop is the panic that ends a guest at a program budget; wazero
// returns it wrapped in the call's error.
type toolStop struct{ err *abi.Error }

func (s *toolStop) Error() string { return s.err.Error() }

// toolStopOf returns the budget error that stopped a guest, or nil.
func toolStopOf(err error) *abi.Error {
	var s *toolStop
	if errors.As(err, &s) {
		return s.err
	}
	return nil
}

// noCaller is the answer of a guest run without a ToolCaller.
var noCaller = Answer(abi.Failure("", abi.Errorf(abi.CodePermissionDenied, "this call cannot call tools: the host runs inner calls only for a code tool it calls itself")), "")

// Answer kinds: the first byte of an answer.
const (
	// AnswerOutput is a successful call: the rest of the answer is the
	// tool's output JSON, as is ("null" for none).
	AnswerOutput = 'S'
	// AnswerFailure is a failed call: the rest is the JSON object
	// {"toolId", "code", "message", "observation"} (FailureAnswer).
	AnswerFailure = 'F'
)

// FailureAnswer is what follows AnswerFailure.
type FailureAnswer struct {
	// ToolID is the tool the call resolved to (empty when none did).
	ToolID string `json:"toolId"`
	// Code and Message are the envelope's error.
	Code    abi.Code `json:"code"`
	Message string   `json:"message"`
	// Observation is the text the model would read for this failure.
	Observation string `json:"observation"`
}

// Answer encodes an inner call's envelope as the import's answer: what a
// program can use of it, its output or its failure. A successful answer
// is the output's bytes behind one kind byte, so the guest hands them to
// its interpreter's JSON decoder at once instead of first decoding an
// envelope around them (40 % of the guest's work per inner call, which
// WebAssembly multiplies about thirtyfold). The envelope itself
// (logs, usage, duration) stays with the host, which records it as the
// call's step.
func Answer(env abi.Envelope, observation string) []byte {
	if env.Error == nil && env.Status != abi.StatusFailure {
		out := env.Output
		if len(out) == 0 {
			out = json.RawMessage("null")
		}
		b := make([]byte, 1+len(out))
		b[0] = AnswerOutput
		copy(b[1:], out)
		return b
	}
	f := FailureAnswer{ToolID: env.ToolID, Code: abi.CodeToolError, Observation: observation}
	if env.Error != nil {
		f.Code, f.Message = env.Error.Code, env.Error.Message
	}
	b, err := json.Marshal(f)
	if err != nil { // strings and a code only: cannot fail
		panic(err)
	}
	return append([]byte{AnswerFailure}, b...)
}

// newToolModule instantiates the import's host module in rt.
func newToolModule(ctx context.Context, rt wazero.Runtime) error {
	i32 := api.ValueTypeI32
	_, err := rt.NewHostModuleBuilder(ToolModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(callTool), []api.ValueType{i32, i32, i32, i32, i32, i32}, []api.ValueType{api.ValueTypeI64}).
		WithParameterNames("tool", "tool_len", "args", "args_len", "out", "out_cap").
		Export(ToolFunc).
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("instantiate the %s host module: %w", ToolModule, err)
	}
	return nil
}

// callTool is the import. A guest that passes memory it does not have
// traps, like any bad memory access.
func callTool(ctx context.Context, mod api.Module, stack []uint64) {
	toolPtr, toolLen := uint32(stack[0]), uint32(stack[1])
	argsPtr, argsLen := uint32(stack[2]), uint32(stack[3])
	outPtr, outCap := uint32(stack[4]), uint32(stack[5])
	s, _ := ctx.Value(toolSessionKey{}).(*toolSession)
	mem := mod.Memory()
	var answer []byte
	switch {
	case s == nil:
		answer = noCaller
	case toolLen == 0:
		if s.pending == nil {
			panic(fmt.Errorf("%s.%s: no answer is waiting (toolLen 0 fetches the answer of the previous call)", ToolModule, ToolFunc))
		}
		answer = s.pending
	default:
		if toolLen > maxToolName {
			panic(fmt.Errorf("%s.%s: the tool name is %d bytes, more than %d", ToolModule, ToolFunc, toolLen, maxToolName))
		}
		tool, ok1 := mem.Read(toolPtr, toolLen)
		args, ok2 := mem.Read(argsPtr, argsLen)
		if !ok1 || !ok2 {
			panic(fmt.Errorf("%s.%s: the tool name or arguments lie outside the guest's memory", ToolModule, ToolFunc))
		}
		var stop *abi.Error
		answer, stop = s.call(ctx, string(tool), append([]byte(nil), args...))
		if stop != nil {
			panic(&toolStop{err: stop})
		}
	}
	if uint64(len(answer)) <= uint64(outCap) {
		if !mem.Write(outPtr, answer) {
			panic(fmt.Errorf("%s.%s: the answer buffer lies outside the guest's memory", ToolModule, ToolFunc))
		}
		if s != nil {
			s.pending = nil
		}
	} else if s != nil {
		s.pending = answer
	}
	stack[0] = uint64(len(answer))
}
