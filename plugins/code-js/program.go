package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/dop251/goja"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/abi/guest"
	"github.com/agenthost/agenthost/plugins/internal/toolcall"
)

const (
	// MaxLogBytes caps the console log returned with the result.
	MaxLogBytes = 64 << 10
	// maxCodeBytes caps the program text.
	maxCodeBytes = 256 << 10
)

// parseErr reads the parser's "program.js: Line L:C message" form.
var parseErr = regexp.MustCompile(`Line (\d+):(\d+) (.*)$`)

// Input is the tool's arguments.
type Input struct {
	// Code is the body of an async function: it may await and return.
	Code string `json:"code"`
	// Input is any JSON value, the program's variable "input".
	Input json.RawMessage `json:"input,omitempty"`
}

// Output is the tool's result.
type Output struct {
	// Result is what the program returned (undefined becomes null).
	Result json.RawMessage `json:"result"`
	// Log holds the console lines, capped at MaxLogBytes.
	Log []string `json:"log"`
	// LogTruncated says some lines were left out.
	LogTruncated bool `json:"logTruncated,omitempty"`
	// Calls is the number of tool calls the program made.
	Calls int `json:"calls"`
}

// prologue wraps the program in an async function, so it may use await
// and return at the top level; it takes one line, which positions give
// back.
const prologue = "(async function (input) {"

// Run runs in.Code. A program error is an *abi.Error: INVALID_ARGUMENTS
// for a syntax error (with its line and column), the inner call's code
// for a failed inner call the program did not catch, TOOL_ERROR for any
// other exception. JavaScript has no step counter here: an endless loop
// ends at the host's deadline (TIMEOUT) or fuel.
func Run(in Input, call toolcall.Caller) (Output, error) {
	if strings.TrimSpace(in.Code) == "" {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "code is empty: give the body of an async function; return the result")
	}
	if len(in.Code) > maxCodeBytes {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "code is %d bytes, more than the %d-byte cap", len(in.Code), maxCodeBytes)
	}
	p := next
	next = nil
	if p == nil {
		var err error
		if p, err = newProgram(); err != nil {
			return Output{}, guest.Errorf(abi.CodeToolError, "set up: %s", err.Error())
		}
	}
	p.call = call
	vm := p.vm
	prg, err := goja.Compile("program.js", prologue+"\n"+in.Code+"\n})", false)
	if err != nil {
		var serr *goja.CompilerSyntaxError
		if errors.As(err, &serr) && serr.File != nil {
			pos := serr.File.Position(serr.Offset)
			return Output{}, guest.Errorf(abi.CodeInvalidArguments, "syntax error at line %d, column %d: %s", pos.Line-1, pos.Column, serr.Message)
		}
		if m := parseErr.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			return Output{}, guest.Errorf(abi.CodeInvalidArguments, "syntax error at line %d, column %s: %s", max(line-1, 1), m[2], m[3])
		}
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "syntax error: %s", err.Error())
	}
	input := goja.Undefined()
	if len(in.Input) > 0 {
		var v any
		if err := json.Unmarshal(in.Input, &v); err != nil {
			return Output{}, guest.Errorf(abi.CodeInvalidArguments, "input: %s", err.Error())
		}
		input = vm.ToValue(v)
	}
	fnv, err := vm.RunProgram(prg)
	if err != nil {
		return Output{}, p.explain(err, nil)
	}
	fn, _ := goja.AssertFunction(fnv)
	// Calling the async function runs it up to its end (tool calls are
	// synchronous underneath) and then the promise jobs, so the promise
	// is settled when the call returns unless the program awaits
	// something that never resolves.
	ret, err := fn(goja.Undefined(), input)
	if err != nil {
		return Output{}, p.explain(err, nil)
	}
	promise, ok := ret.Export().(*goja.Promise)
	if !ok {
		return Output{}, guest.Errorf(abi.CodeToolError, "the program did not run as an async function")
	}
	switch promise.State() {
	case goja.PromiseStateRejected:
		return Output{}, p.explain(nil, promise.Result())
	case goja.PromiseStatePending:
		return Output{}, guest.Errorf(abi.CodeToolError, "the program awaited a promise that never settled")
	}
	out, err := p.toJSON(promise.Result())
	if err != nil {
		return Output{}, guest.Errorf(abi.CodeToolError, "the result is not JSON: %s", err.Error())
	}
	return Output{Result: out, Log: p.lines(), LogTruncated: p.truncated, Calls: p.calls}, nil
}

// newProgram makes a program's runtime with its globals (tools, call,
// console); Run sets its caller.
func newProgram() (*program, error) {
	p := &program{vm: goja.New()}
	if err := p.globals(); err != nil {
		return nil, err
	}
	return p, nil
}

// program is one run's state.
type program struct {
	vm        *goja.Runtime
	call      toolcall.Caller
	stringify goja.Callable // JSON.stringify as the program started
	// names holds tools.<ns> and tools.<ns>.<name> once made, so a loop
	// does not build a function per call; at most maxNames.
	names     map[string]goja.Value
	calls     int
	log       []string
	logBytes  int
	truncated bool
}

// maxNames bounds program.names: a program that makes up names
// (tools.x[name]) gets a fresh value past it.
const maxNames = 256

// named returns the cached value of key ("n", "t" or "s" for a
// namespace, a tool or the search, a NUL, the name), or makes and
// caches it.
func (p *program) named(key string, make func() goja.Value) goja.Value {
	if v, ok := p.names[key]; ok {
		return v
	}
	v := make()
	if len(p.names) < maxNames {
		if p.names == nil {
			p.names = map[string]goja.Value{}
		}
		p.names[key] = v
	}
	return v
}

// globals sets tools, call and console, and takes JSON.stringify before
// the program can replace it (arguments cross the import as JSON
// whatever the program does to its JSON object).
func (p *program) globals() error {
	var ok bool
	if p.stringify, ok = goja.AssertFunction(p.vm.Get("JSON").ToObject(p.vm).Get("stringify")); !ok {
		return errors.New("JSON.stringify is missing")
	}
	console := p.vm.NewObject()
	for _, name := range []string{"log", "info", "warn", "error", "debug"} {
		if err := console.Set(name, p.print); err != nil {
			return err
		}
	}
	if err := p.vm.Set("console", console); err != nil {
		return err
	}
	if err := p.vm.Set("call", func(c goja.FunctionCall) goja.Value {
		tool := c.Argument(0)
		if goja.IsUndefined(tool) || tool.String() == "" {
			panic(p.vm.NewTypeError("call(tool, args): the tool must be a name such as \"fs:read\""))
		}
		return p.invoke(tool.String(), c.Argument(1))
	}); err != nil {
		return err
	}
	return p.vm.Set("tools", p.vm.NewDynamicObject(&namespace{p: p}))
}

// print adds a console line to the capped log.
func (p *program) print(c goja.FunctionCall) goja.Value {
	parts := make([]string, len(c.Arguments))
	for i, a := range c.Arguments {
		parts[i] = a.String()
	}
	msg := strings.Join(parts, " ")
	if p.logBytes+len(msg) > MaxLogBytes {
		p.truncated = true
		return goja.Undefined()
	}
	p.logBytes += len(msg)
	p.log = append(p.log, msg)
	return goja.Undefined()
}

func (p *program) lines() []string {
	if p.log == nil {
		return []string{}
	}
	return p.log
}

// invoke makes one inner call; a failure is thrown as an Error with
// code, tool and observation properties.
func (p *program) invoke(tool string, args goja.Value) goja.Value {
	raw := []byte("{}")
	if args != nil && !goja.IsUndefined(args) && !goja.IsNull(args) {
		b, err := p.toJSON(args)
		if err != nil {
			panic(p.vm.NewTypeError("%s: the arguments are not JSON: %s", tool, err.Error()))
		}
		raw = b
	}
	if p.call == nil {
		panic(p.vm.NewTypeError("tool calls are not available here"))
	}
	p.calls++
	resp, err := p.call(tool, raw)
	if err != nil {
		panic(p.vm.NewGoError(err))
	}
	out, err := resp.Result(tool)
	var cerr *toolcall.Error
	if errors.As(err, &cerr) {
		e := p.vm.NewGoError(cerr)
		_ = e.Set("code", string(cerr.Code))
		_ = e.Set("tool", cerr.Tool)
		_ = e.Set("observation", cerr.Observation)
		panic(e)
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		panic(p.vm.NewGoError(err))
	}
	return p.vm.ToValue(v)
}

// toJSON is JSON.stringify(v), with undefined as null.
func (p *program) toJSON(v goja.Value) (json.RawMessage, error) {
	if v == nil || goja.IsUndefined(v) {
		return json.RawMessage("null"), nil
	}
	s, err := p.stringify(goja.Undefined(), v)
	if err != nil {
		return nil, err
	}
	if goja.IsUndefined(s) {
		return json.RawMessage("null"), nil
	}
	return json.RawMessage(s.String()), nil
}

// explain turns an exception into the tool's error: a failed inner call
// keeps its code; anything else is TOOL_ERROR with the program's line.
// val is the thrown value when known, else err's.
func (p *program) explain(err error, val goja.Value) error {
	var ex *goja.Exception
	if val == nil && errors.As(err, &ex) {
		val = ex.Value()
	}
	if obj, ok := val.(*goja.Object); ok {
		if code := obj.Get("code"); code != nil && !goja.IsUndefined(code) && isCode(code.String()) {
			return guest.Errorf(abi.Code(code.String()), "%s", obj.Get("message").String())
		}
		if stack := obj.Get("stack"); stack != nil && !goja.IsUndefined(stack) {
			return guest.Errorf(abi.CodeToolError, "%s", shiftLines(stack.String()))
		}
	}
	if val != nil {
		return guest.Errorf(abi.CodeToolError, "uncaught: %s", val.String())
	}
	return guest.Errorf(abi.CodeToolError, "%s", shiftLines(err.Error()))
}

// shiftLines gives back the line the prologue took in "program.js:L:C"
// positions.
func shiftLines(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "program.js:")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i+len("program.js:"):]
		n, j := 0, 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			n = n*10 + int(s[j]-'0')
			j++
		}
		fmt.Fprintf(&b, "line %d:", max(n-1, 1))
		s = strings.TrimPrefix(s[j:], ":")
	}
}

func isCode(s string) bool {
	for _, c := range abi.Codes {
		if string(c) == s && c != abi.CodeToolError {
			return true
		}
	}
	return false
}

// search is tools.search(query): the tools this program may call whose
// name or description matches query, each with its TypeScript
// declaration ({id, description, declaration}). It is not a tool call.
func (p *program) search(c goja.FunctionCall) goja.Value {
	if p.call == nil {
		panic(p.vm.NewTypeError("tools.search is not available here"))
	}
	req, _ := json.Marshal(map[string]string{"query": c.Argument(0).String(), "lang": "ts"})
	resp, err := p.call(searchName, req)
	if err != nil {
		panic(p.vm.NewGoError(err))
	}
	out, err := resp.Result("tools.search")
	if err != nil {
		panic(p.vm.NewGoError(err))
	}
	var v struct {
		Tools []any `json:"tools"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		panic(p.vm.NewGoError(err))
	}
	return p.vm.ToValue(v.Tools)
}

// searchName is the import's name for tools.search (host.SearchName).
const searchName = "$search"

// namespace is the global "tools": tools.<ns>.<name>(args) calls the
// tool "<ns>:<name>" (an underscore in a name stands for a dash).
type namespace struct {
	p  *program
	ns string
}

func (n *namespace) Get(key string) goja.Value {
	p := n.p
	if n.ns == "" && key == "search" {
		return p.named("s\x00", func() goja.Value { return p.vm.ToValue(p.search) })
	}
	if n.ns == "" {
		return p.named("n\x00"+key, func() goja.Value { return p.vm.NewDynamicObject(&namespace{p: p, ns: key}) })
	}
	id := n.ns + ":" + key
	return p.named("t\x00"+id, func() goja.Value {
		return p.vm.ToValue(func(c goja.FunctionCall) goja.Value { return p.invoke(id, c.Argument(0)) })
	})
}
func (n *namespace) Set(string, goja.Value) bool { return false }
func (n *namespace) Has(string) bool             { return true }
func (n *namespace) Delete(string) bool          { return false }
func (n *namespace) Keys() []string              { return nil }

// Interface guards
var _ goja.DynamicObject = (*namespace)(nil)
