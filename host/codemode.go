package host

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/budget"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/observation"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/wasm"
	"github.com/agenthost/agenthost/host/wire"
)

// Code mode (docs/CODEMODE.md): a code tool (code:starlark) runs a
// program that calls tools through the WASM runner's host import. Each
// inner call is a full Call made for the code tool's caller: the
// caller's scope (CodeScope) and the host's policy decide what it may
// call, never the code tool's own grant, which gives the program
// nothing. The program as a whole is held to budgets read from the code
// tool's grant config.

// Defaults of a program's budgets (handler config maxCalls and
// maxCallOutputBytes override them, per tool and by policy).
const (
	DefaultCodeMaxCalls       = 100
	DefaultCodeMaxOutputBytes = 8 << 20
)

// CodeScope is what the caller of a code tool decides about the
// program's inner calls. Put it in the call's context with
// WithCodeScope; without one, a program may call every tool the host's
// policy lets it call.
type CodeScope struct {
	// Allowed reports whether the caller may see tool id (an agent
	// profile's inventory, say); nil allows every tool.
	Allowed func(id string) bool
	// Step, when set, receives every inner call once it has ended, in
	// the order made (a front-end records it as a tool step of its run).
	Step func(CodeStep)
}

// CodeStep is one inner call of a program.
type CodeStep struct {
	// Name is the tool as the program named it; the envelope's ToolID
	// is the tool it resolved to.
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args"`
	Envelope abi.Envelope    `json:"envelope"`
}

type codeScopeKey struct{}
type programKey struct{}

// WithCodeScope returns ctx carrying s for the code tools called under
// it.
func WithCodeScope(ctx context.Context, s CodeScope) context.Context {
	return context.WithValue(ctx, codeScopeKey{}, s)
}

// toolCaller is implemented by a prepared tool whose module imports the
// runner's agenthost_tools.call: a code tool.
type toolCaller interface{ CallsTools() bool }

// program is one run of a code tool.
type program struct {
	h        *Host
	scope    CodeScope
	maxCalls int
	maxBytes int64
	bytes    int64
	steps    []stepSummary
}

// stepSummary is what a failure's details say of each inner call.
type stepSummary struct {
	Tool   string   `json:"tool"`
	Status string   `json:"status"`
	Code   abi.Code `json:"code,omitempty"`
}

// codeProgram returns the context a code tool runs under, with its
// program; for any other tool it returns ctx and a nil program. A code
// tool called from inside a program is refused: programs do not nest.
func (h *Host) codeProgram(ctx context.Context, t *manifest.Tool, p *prepared) (context.Context, *program, *abi.Error) {
	tc, ok := p.run.(toolCaller)
	if !ok || !tc.CallsTools() {
		return ctx, nil, nil
	}
	if ctx.Value(programKey{}) != nil {
		return ctx, nil, abi.Errorf(abi.CodePermissionDenied, "a program cannot call %s: code tools do not call each other or themselves; do the work in this program", t.ToolID)
	}
	scope, _ := ctx.Value(codeScopeKey{}).(CodeScope)
	prog := &program{h: h, scope: scope,
		maxCalls: configInt(p.grant.Config, "maxCalls", DefaultCodeMaxCalls),
		maxBytes: int64(configInt(p.grant.Config, "maxCallOutputBytes", DefaultCodeMaxOutputBytes))}
	base := context.WithValue(ctx, programKey{}, prog)
	return wasm.WithToolCaller(base, func(gctx context.Context, name string, args []byte) ([]byte, *abi.Error) {
		return prog.call(base, gctx, name, args)
	}), prog, nil
}

// configInt reads a positive integer from a grant's config.
func configInt(c map[string]string, key string, def int) int {
	if n, err := strconv.Atoi(c[key]); err == nil && n > 0 {
		return n
	}
	return def
}

// call runs one inner call: base carries the caller's values (scope,
// root budget, trace), gctx the guest's deadline and stop.
func (prog *program) call(base, gctx context.Context, name string, args []byte) ([]byte, *abi.Error) {
	if name == SearchName {
		return prog.search(args)
	}
	if len(prog.steps) >= prog.maxCalls {
		return nil, prog.stop(abi.CodeFuelExhausted, "calls", fmt.Sprintf("the program made %d tool calls, its budget (maxCalls); do more per call (a tool that takes many items, a glob) or split the task", prog.maxCalls))
	}
	ctx, cancel := context.WithCancelCause(base)
	defer cancel(nil)
	defer context.AfterFunc(gctx, func() { cancel(context.Cause(gctx)) })()
	start := time.Now()
	env := prog.inner(ctx, name, args)
	env = finish(env, start)
	obs := ""
	if env.Error != nil {
		obs = observation.Error(env.ToolID, env.Error)
	}
	b := wasm.Answer(env, obs)
	s := stepSummary{Tool: env.ToolID, Status: string(env.Status)}
	if env.Error != nil {
		s.Code = env.Error.Code
	}
	prog.steps = append(prog.steps, s)
	if prog.scope.Step != nil {
		prog.scope.Step(CodeStep{Name: name, Args: json.RawMessage(args), Envelope: env})
	}
	prog.bytes += int64(len(b))
	if prog.bytes > prog.maxBytes {
		return nil, prog.stop(abi.CodeOutputLimit, "callOutputBytes", fmt.Sprintf("the program's tool calls returned more than %d bytes in all, its budget (maxCallOutputBytes); ask the tools for less (a range, a filter, a limit)", prog.maxBytes))
	}
	return b, nil
}

// SearchName is the name a guest's tools.search(query) passes to the
// import: not a tool (no tool ID starts with '$'), but the search of
// the tools this program may call (Host.SearchTools), answered as a
// successful envelope whose output is {"tools": [{id, description,
// declaration}]}. It is not a tool call (no step, not in maxCalls); its
// answers count in maxCallOutputBytes.
const SearchName = "$search"

// search answers tools.search: args {"query", "lang"}.
func (prog *program) search(args []byte) ([]byte, *abi.Error) {
	var in struct {
		Query string `json:"query"`
		Lang  string `json:"lang"`
	}
	env := abi.Envelope{ToolID: SearchName, Status: abi.StatusSuccess, Logs: []string{}}
	if err := json.Unmarshal(args, &in); err != nil {
		env = abi.Failure(SearchName, abi.Errorf(abi.CodeInvalidArguments, "tools.search takes one string, the query: %s", err.Error()))
	} else if found, err := prog.h.SearchTools(in.Query, in.Lang, prog.scope.Allowed, 10); err != nil {
		env = abi.Failure(SearchName, abi.Errorf(abi.CodeInvalidArguments, "%s", err.Error()))
	} else {
		if found == nil {
			found = []ToolDecl{}
		}
		env.Output, _ = json.Marshal(map[string]any{"tools": found})
	}
	b := wasm.Answer(env, "")
	prog.bytes += int64(len(b))
	if prog.bytes > prog.maxBytes {
		return nil, prog.stop(abi.CodeOutputLimit, "callOutputBytes", fmt.Sprintf("the program's tool calls and searches returned more than %d bytes in all, its budget (maxCallOutputBytes)", prog.maxBytes))
	}
	return b, nil
}

// inner resolves name and runs it as a call of the program's caller.
func (prog *program) inner(ctx context.Context, name string, args []byte) abi.Envelope {
	h := prog.h
	t, ok := h.resolveInner(name)
	if !ok {
		return h.Call(ctx, name, args) // the host's own UNKNOWN_TOOL, with its suggestions
	}
	if prog.scope.Allowed != nil && !prog.scope.Allowed(t.ToolID) {
		return h.logged(abi.Failure(t.ToolID, abi.Errorf(abi.CodePermissionDenied, "tool %s is not among the tools this caller may use", t.ToolID)))
	}
	if b := budget.From(ctx); b != nil {
		// The root call's budget counts every inner call; the program
		// itself only waits on them, so it gives back its place in
		// flight.
		budget.Yield(ctx)
		slot, aerr := b.Acquire(ctx)
		if aerr != nil {
			return h.logged(abi.Failure(t.ToolID, aerr))
		}
		defer slot.Release()
		ctx = budget.WithSlot(ctx, slot) // a nested workflow gives its place back while it waits (budget.Yield)
	}
	return h.Call(ctx, t.ToolID, args)
}

// resolveInner finds the tool a program named: an ID (with or without
// @version), a wire name, or an ID with underscores for dashes
// (tools.data.csv_to_json).
func (h *Host) resolveInner(name string) (*manifest.Tool, bool) {
	if t, err := h.reg.Lookup(name); err == nil {
		return t, true
	}
	for _, t := range h.reg.Filter("", "") {
		if wire.Name(t.ToolID) == name || strings.ReplaceAll(t.ToolID, "-", "_") == name {
			return t, true
		}
	}
	return nil, false
}

// stop is a budget's error, with the calls made so far.
func (prog *program) stop(code abi.Code, budget, msg string) *abi.Error {
	return abi.Errorf(code, "%s", msg).WithDetails(map[string]any{"budget": budget, "steps": prog.summary()})
}

func (prog *program) summary() []stepSummary {
	if prog.steps == nil {
		return []stepSummary{}
	}
	return prog.steps
}

// settle completes a program's result: a failure the guest reported with
// a host code (a syntax error is INVALID_ARGUMENTS, the step limit
// FUEL_EXHAUSTED, an inner call's failure its code) keeps that code
// instead of TOOL_ERROR, and every failure lists the calls made.
func (prog *program) settle(res *runner.Result) {
	if prog == nil || res.Err == nil {
		return
	}
	e := *res.Err
	details, _ := e.Details.(map[string]any)
	if details == nil {
		details = map[string]any{}
	} else {
		details = copyMap(details)
	}
	if e.Code == abi.CodeToolError {
		if tc, _ := details["toolCode"].(string); tc != "" && tc != string(abi.CodeToolError) && isCode(tc) {
			e.Code = abi.Code(tc)
			delete(details, "toolCode")
			delete(details, "exitStatus")
			if e.Code == abi.CodeFuelExhausted {
				details["budget"] = "steps"
			}
		}
	}
	if _, ok := details["steps"]; !ok {
		details["steps"] = prog.summary()
	}
	e.Details = details
	res.Err = &e
}

func isCode(s string) bool {
	for _, c := range abi.Codes {
		if string(c) == s {
			return true
		}
	}
	return false
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}
