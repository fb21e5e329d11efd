package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	starjson "go.starlark.net/lib/json"
	"go.starlark.net/lib/math"
	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/abi/guest"
	"github.com/agenthost/agenthost/plugins/internal/toolcall"
)

// Defaults of a program's own limits (the host adds fuel, time, memory
// and the inner-call budgets).
const (
	// DefaultMaxSteps bounds the Starlark steps of one program: an endless
	// loop ends with FUEL_EXHAUSTED and a message saying so long before
	// the host's deadline.
	DefaultMaxSteps = 10_000_000
	// MaxLogBytes caps the print log returned with the result.
	MaxLogBytes = 64 << 10
	// maxCodeBytes caps the program text.
	maxCodeBytes = 256 << 10
)

// Input is the tool's arguments.
type Input struct {
	// Code is the Starlark program.
	Code string `json:"code"`
	// Input is any JSON value, the program's global "input".
	Input json.RawMessage `json:"input,omitempty"`
}

// Output is the tool's result.
type Output struct {
	// Result is what main() returned, else the global "result", else
	// null.
	Result json.RawMessage `json:"result"`
	// Log holds the lines the program printed, capped at MaxLogBytes.
	Log []string `json:"log"`
	// LogTruncated says some lines were left out.
	LogTruncated bool `json:"logTruncated,omitempty"`
	// Calls is the number of tool calls the program made.
	Calls int `json:"calls"`
}

// Options are a run's limits and its way to call tools.
type Options struct {
	MaxSteps uint64
	Call     toolcall.Caller
}

// fileOptions lets programs use while loops, top-level if/for, global
// reassignment, recursion and sets: a model writes Python, not Bazel.
var fileOptions = &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true, Recursion: true}

// Run runs the program in.Code. A program error is an *abi.Error:
// INVALID_ARGUMENTS for a syntax or name error (with its line and
// column), FUEL_EXHAUSTED for the step limit, the inner call's code for
// an inner call the program did not handle, and TOOL_ERROR for any other
// runtime error (fail(), a bad operation).
func Run(in Input, o Options) (Output, error) {
	if strings.TrimSpace(in.Code) == "" {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "code is empty: give a Starlark program; set the global result (or define main()) to return a value")
	}
	if len(in.Code) > maxCodeBytes {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "code is %d bytes, more than the %d-byte cap", len(in.Code), maxCodeBytes)
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = DefaultMaxSteps
	}
	p := &program{call: o.Call}
	thread := &starlark.Thread{Name: "code", Print: func(_ *starlark.Thread, msg string) { p.print(msg) }}
	thread.SetMaxExecutionSteps(o.MaxSteps)
	input := starlark.Value(starlark.None)
	if len(in.Input) > 0 {
		v, err := fromJSON(thread, in.Input)
		if err != nil {
			return Output{}, guest.Errorf(abi.CodeInvalidArguments, "input: %s", err.Error())
		}
		input = v
	}
	predeclared := starlark.StringDict{
		"input": input,
		"tools": &namespace{p: p},
		"call":  starlark.NewBuiltin("call", p.callBuiltin),
		"json":  starjson.Module,
		"math":  math.Module,
	}
	globals, err := starlark.ExecFileOptions(fileOptions, thread, "program.star", in.Code, predeclared)
	var result starlark.Value = starlark.None
	if err == nil {
		if fn, ok := globals["main"].(*starlark.Function); ok {
			result, err = starlark.Call(thread, fn, nil, nil)
		} else if v, ok := globals["result"]; ok {
			result = v
		}
	}
	if err != nil {
		return Output{}, p.explain(thread, o.MaxSteps, err)
	}
	out, err := toJSON(thread, result)
	if err != nil {
		return Output{}, guest.Errorf(abi.CodeToolError, "the result is not JSON: %s (return None, bools, numbers, strings, lists and dicts with string keys)", err.Error())
	}
	return Output{Result: out, Log: p.lines(), LogTruncated: p.truncated, Calls: p.calls}, nil
}

// program is one run's state.
type program struct {
	call toolcall.Caller
	// names holds tools.<ns> and tools.<ns>.<name> once made, so a loop
	// does not build a builtin per call; at most maxNames.
	names     map[string]starlark.Value
	calls     int
	log       []string
	logBytes  int
	truncated bool
}

// print adds a line to the capped log.
func (p *program) print(msg string) {
	if p.logBytes+len(msg) > MaxLogBytes {
		p.truncated = true
		return
	}
	p.logBytes += len(msg)
	p.log = append(p.log, msg)
}

func (p *program) lines() []string {
	if p.log == nil {
		return []string{}
	}
	return p.log
}

// explain turns a program error into the tool's error, with what the
// model needs to fix the program: the position of a syntax error, the
// limit that stopped it, the inner call that failed.
func (p *program) explain(thread *starlark.Thread, maxSteps uint64, err error) error {
	var serr syntax.Error
	if errors.As(err, &serr) {
		return guest.Errorf(abi.CodeInvalidArguments, "syntax error at line %d, column %d: %s", serr.Pos.Line, serr.Pos.Col, serr.Msg)
	}
	var rerrs resolve.ErrorList
	if errors.As(err, &rerrs) {
		msgs := make([]string, 0, len(rerrs))
		for _, e := range rerrs {
			msgs = append(msgs, fmt.Sprintf("line %d, column %d: %s", e.Pos.Line, e.Pos.Col, e.Msg))
		}
		return guest.Errorf(abi.CodeInvalidArguments, "the program does not resolve: %s", strings.Join(msgs, "; "))
	}
	where := ""
	var eerr *starlark.EvalError
	if errors.As(err, &eerr) {
		where = position(eerr.CallStack)
	}
	if thread.ExecutionSteps() >= maxSteps {
		return guest.Errorf(abi.CodeFuelExhausted, "the program ran more than %d Starlark steps%s and was stopped: look for an endless loop, or do less work per run (%d tool calls were made)", maxSteps, where, p.calls)
	}
	var cerr *toolcall.Error
	if errors.As(err, &cerr) {
		return guest.Errorf(cerr.Code, "%s%s", cerr.Error(), where)
	}
	msg := err.Error()
	if eerr != nil {
		msg = eerr.Msg
	}
	return guest.Errorf(abi.CodeToolError, "%s%s", msg, where)
}

// position names the innermost program line of a call stack.
func position(stack starlark.CallStack) string {
	for i := len(stack) - 1; i >= 0; i-- {
		if pos := stack[i].Pos; pos.Line > 0 && pos.Filename() != "<builtin>" {
			return fmt.Sprintf(" (at line %d, column %d)", pos.Line, pos.Col)
		}
	}
	return ""
}

// callBuiltin is call(tool, args=None, **kwargs): the tool by ID or wire
// name, with a dict of arguments and/or keyword arguments.
func (p *program) callBuiltin(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) < 1 || len(args) > 2 {
		return nil, fmt.Errorf("call: want call(tool, args = {...}) or call(tool, name = value, ...), got %d positional arguments", len(args))
	}
	tool, ok := starlark.AsString(args[0])
	if !ok || tool == "" {
		return nil, fmt.Errorf("call: the tool must be a non-empty string such as \"fs:read\", not %s", args[0].Type())
	}
	var dict starlark.Value
	if len(args) == 2 {
		dict = args[1]
	}
	return p.invoke(thread, tool, dict, kwargs)
}

// invoke makes one inner call and returns its output as a Starlark value;
// a failed call is a *toolcall.Error.
func (p *program) invoke(thread *starlark.Thread, tool string, dict starlark.Value, kwargs []starlark.Tuple) (starlark.Value, error) {
	d := starlark.NewDict(len(kwargs))
	if dict != nil && dict != starlark.None {
		src, ok := dict.(*starlark.Dict)
		if !ok {
			return nil, fmt.Errorf("%s: the arguments must be a dict, not %s", tool, dict.Type())
		}
		for _, kv := range src.Items() {
			if err := d.SetKey(kv[0], kv[1]); err != nil {
				return nil, err
			}
		}
	}
	for _, kv := range kwargs {
		if err := d.SetKey(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	raw, err := toJSON(thread, d)
	if err != nil {
		return nil, fmt.Errorf("%s: the arguments are not JSON: %w", tool, err)
	}
	if p.call == nil {
		return nil, errors.New("tool calls are not available here")
	}
	p.calls++
	resp, err := p.call(tool, raw)
	if err != nil {
		return nil, err
	}
	out, err := resp.Result(tool)
	if err != nil {
		return nil, err
	}
	return fromJSON(thread, out)
}

// search is tools.search(query): the tools this program may call whose
// name or description matches query, each with its stub (id,
// description, declaration). It is not a tool call.
func (p *program) search(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var query string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "query", &query); err != nil {
		return nil, err
	}
	if p.call == nil {
		return nil, errors.New("tools.search is not available here")
	}
	req, _ := json.Marshal(map[string]string{"query": query, "lang": "starlark"})
	resp, err := p.call(searchName, req)
	if err != nil {
		return nil, err
	}
	out, err := resp.Result("tools.search")
	if err != nil {
		return nil, err
	}
	v, err := fromJSON(thread, out)
	if err != nil {
		return nil, err
	}
	if d, ok := v.(*starlark.Dict); ok {
		if tools, found, _ := d.Get(starlark.String("tools")); found {
			return tools, nil
		}
	}
	return v, nil
}

// searchName is the import's name for tools.search (host.SearchName).
const searchName = "$search"

// namespace is the global "tools": tools.<ns> is a namespace, and
// tools.<ns>.<name>(...) calls the tool "<ns>:<name>" (an underscore in
// a name stands for a dash, as in tools.data.csv_to_json);
// tools.search(query) finds tools (a namespace named "search" is reached
// with call("search:...")).
type namespace struct {
	p  *program
	ns string // "" for the root
}

func (n *namespace) String() string {
	if n.ns == "" {
		return "<tools>"
	}
	return "<tools." + n.ns + ">"
}
func (n *namespace) Type() string          { return "tools" }
func (n *namespace) Freeze()               {}
func (n *namespace) Truth() starlark.Bool  { return starlark.True }
func (n *namespace) Hash() (uint32, error) { return 0, errors.New("tools is not hashable") }
func (n *namespace) AttrNames() []string   { return nil }

// maxNames bounds program.names: a program that makes up names
// (getattr(tools.x, name)) gets a fresh value past it.
const maxNames = 256

// named returns the cached value of key ("n", "t" or "s" for a
// namespace, a tool or the search, a NUL, the name), or makes and
// caches it.
func (p *program) named(key string, make func() starlark.Value) starlark.Value {
	if v, ok := p.names[key]; ok {
		return v
	}
	v := make()
	if len(p.names) < maxNames {
		if p.names == nil {
			p.names = map[string]starlark.Value{}
		}
		p.names[key] = v
	}
	return v
}

// Attr implements starlark.HasAttrs.
func (n *namespace) Attr(name string) (starlark.Value, error) {
	p := n.p
	if n.ns == "" && name == "search" {
		return p.named("s\x00", func() starlark.Value { return starlark.NewBuiltin("tools.search", p.search) }), nil
	}
	if n.ns == "" {
		return p.named("n\x00"+name, func() starlark.Value { return &namespace{p: p, ns: name} }), nil
	}
	return p.named("t\x00"+n.ns+":"+name, func() starlark.Value { return n.tool(name) }), nil
}

// tool is the builtin tools.<ns>.<name>.
func (n *namespace) tool(name string) starlark.Value {
	id := n.ns + ":" + name
	return starlark.NewBuiltin("tools."+n.ns+"."+name, func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) > 1 {
			return nil, fmt.Errorf("%s: pass arguments by name (%s(path = ...)) or as one dict", b.Name(), b.Name())
		}
		var dict starlark.Value
		if len(args) == 1 {
			dict = args[0]
		}
		return n.p.invoke(thread, id, dict, kwargs)
	})
}

// toJSON encodes v as the json module's encoder does (appendJSON for
// the common values, else the module's encoder itself, which refuses
// non-string dict keys, NaN and cycles).
func toJSON(thread *starlark.Thread, v starlark.Value) (json.RawMessage, error) {
	if b, err := appendJSON(nil, v, 0); err == nil {
		return b, nil
	}
	s, err := starlark.Call(thread, starjson.Module.Members["encode"], starlark.Tuple{v}, nil)
	if err != nil {
		var eerr *starlark.EvalError
		if errors.As(err, &eerr) {
			return nil, errors.New(eerr.Msg)
		}
		return nil, err
	}
	return json.RawMessage(s.(starlark.String).GoString()), nil
}

// fromJSON decodes JSON into Starlark values (objects become dicts).
func fromJSON(thread *starlark.Thread, b []byte) (starlark.Value, error) {
	v, err := starlark.Call(thread, starjson.Module.Members["decode"], starlark.Tuple{starlark.String(b)}, nil)
	if err != nil {
		var eerr *starlark.EvalError
		if errors.As(err, &eerr) {
			return nil, errors.New(eerr.Msg)
		}
		return nil, err
	}
	return v, nil
}

// Interface guards
var _ starlark.HasAttrs = (*namespace)(nil)
