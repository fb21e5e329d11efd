package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/abi"
)

// The front-ends of code mode (docs/CODEMODE.md): agent mode "code" and
// the MCP tools offer a model one tool, run_code, that runs its program
// through code:js or code:starlark, plus the typed API it programs
// against. What both share lives here.

// Names of the front-end tools of code mode.
const (
	// RunCodeName is the one tool of agent mode code and an MCP tool.
	RunCodeName = "run_code"
	// SearchToolsName is the MCP tool that searches the typed API.
	SearchToolsName = "search_tools"
)

// Languages of RunCodeArgs.
const (
	CodeLangJS       = "js"
	CodeLangStarlark = "starlark"
)

// RunCodeArgs are run_code's arguments.
type RunCodeArgs struct {
	// Code is the program: the body of an async function (js) or a
	// Starlark module.
	Code string `json:"code"`
	// Language is "js" (default) or "starlark".
	Language string `json:"language,omitempty"`
	// Input is any JSON value, the program's global input.
	Input json.RawMessage `json:"input,omitempty"`
}

// RunCodeSchema is the JSON Schema of run_code's arguments, in the form
// the model providers accept (an object at the top, no combinators).
func RunCodeSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` +
		`"code":{"type":"string","description":"The program. js: the body of an async function (await tool calls, return the answer). starlark: a module that sets result or defines main()."},` +
		`"language":{"type":"string","enum":["js","starlark"],"description":"The program's language (default js)."},` +
		`"input":{"description":"Any JSON value, the program's global input."}},` +
		`"required":["code"],"additionalProperties":false}`)
}

// codeToolOf is the code tool that runs lang.
func codeToolOf(lang string) (string, bool) {
	switch lang {
	case "", CodeLangJS, "javascript":
		return "code:js", true
	case CodeLangStarlark, "python":
		return "code:starlark", true
	}
	return "", false
}

// nested reports whether a program's inner call named a code front-end
// or a code tool: programs do not nest.
func nested(name string) bool {
	n := strings.TrimPrefix(name, "tools.")
	return n == RunCodeName || n == SearchToolsName || strings.HasPrefix(n, "code:") || strings.HasPrefix(n, "code__") || strings.HasPrefix(n, "code.")
}

// nestedError is the error of a program that called run_code (or a code
// tool) from inside itself.
func nestedError(name string) *abi.Error {
	return abi.Errorf(abi.CodePermissionDenied, "a program cannot call %s: programs do not nest. Call the tools directly in this program (tools.<namespace>.<name>(...)), or use tools.search(\"words\") to find one", name)
}

// RunCode runs a model's run_code call: raw holds RunCodeArgs, and the
// program runs through code:js or code:starlark with scope as its
// caller's (what it may call, where its inner calls are recorded). The
// envelope is the code tool's, under ToolID run_code: on success its
// output is {result, log, calls}. A program that calls run_code, or a
// code tool, fails with PERMISSION_DENIED whose details.nested is true,
// and that inner call's step carries the same error.
func (h *Host) RunCode(ctx context.Context, raw json.RawMessage, scope CodeScope) abi.Envelope {
	var a RunCodeArgs
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return h.logged(abi.Failure(RunCodeName, abi.Errorf(abi.CodeInvalidArguments, "run_code takes {\"code\", \"language\"?, \"input\"?}: %s", err.Error())))
	}
	if strings.TrimSpace(a.Code) == "" {
		return h.logged(abi.Failure(RunCodeName, abi.Errorf(abi.CodeInvalidArguments, "run_code: code is empty; write the program in code")))
	}
	id, ok := codeToolOf(a.Language)
	if !ok {
		return h.logged(abi.Failure(RunCodeName, abi.Errorf(abi.CodeInvalidArguments, "run_code: language %q: want %q or %q", a.Language, CodeLangJS, CodeLangStarlark)))
	}
	args := map[string]any{"code": a.Code}
	if len(a.Input) > 0 && !bytes.Equal(bytes.TrimSpace(a.Input), []byte("null")) {
		args["input"] = a.Input
	}
	b, err := json.Marshal(args)
	if err != nil {
		return h.logged(abi.Failure(RunCodeName, abi.Errorf(abi.CodeInvalidArguments, "run_code: input is not JSON: %s", err.Error())))
	}
	// The steps arrive on the guest's side of the call: nestedName is
	// read once the call has returned, under mu all the same.
	var mu sync.Mutex
	var nestedName string
	inner := scope
	inner.Step = func(s CodeStep) {
		if nested(s.Name) && s.Envelope.Error != nil {
			mu.Lock()
			if nestedName == "" {
				nestedName = s.Name
			}
			mu.Unlock()
			s.Envelope.Error = nestedError(s.Name)
		}
		if scope.Step != nil {
			scope.Step(s)
		}
	}
	env := h.Call(WithCodeScope(ctx, inner), id, b)
	mu.Lock()
	defer mu.Unlock()
	if env.Error != nil && nestedName != "" && (env.Error.Code == abi.CodeUnknownTool || env.Error.Code == abi.CodePermissionDenied) {
		// The program's failure is its nested call's: say so, with its
		// own wording, keeping the steps made.
		e := nestedError(nestedName)
		details := map[string]any{"nested": true}
		if d, ok := env.Error.Details.(map[string]any); ok {
			if steps, ok := d["steps"].([]stepSummary); ok {
				fixed := make([]stepSummary, len(steps))
				for i, st := range steps {
					if nested(st.Tool) && st.Code != "" {
						st.Code = abi.CodePermissionDenied
					}
					fixed[i] = st
				}
				details["steps"] = fixed
			}
		}
		env.Error = e.WithDetails(details)
	}
	env.ToolID = RunCodeName
	return env
}

// CodeAPIOptions shape CodeAPIText.
type CodeAPIOptions struct {
	// Allowed narrows the tools as CodeScope.Allowed does.
	Allowed func(id string) bool
	// MaxListed is how many declarations the text holds at most
	// (DefaultCodeAPIListed when 0); past it the text names the
	// namespaces and tells the model to call tools.search.
	MaxListed int
	// SearchTool, when set, is the name of a tool the model calls to
	// search the API (MCP's search_tools) besides tools.search.
	SearchTool string
}

// DefaultCodeAPIListed is CodeAPIOptions.MaxListed's default.
const DefaultCodeAPIListed = 40

// CodeAPIText is what a model reads before it writes a program: how to
// call run_code, and the tools it may call as TypeScript declarations
// with one-line docs (Starlark programs call the same functions with
// keyword arguments). With more tools than o.MaxListed it lists the
// namespaces and their tool names only and points at tools.search.
func (h *Host) CodeAPIText(o CodeAPIOptions) (string, error) {
	decls, err := h.CodeAPI(CodeAPITypeScript, o.Allowed)
	if err != nil {
		return "", err
	}
	max := o.MaxListed
	if max <= 0 {
		max = DefaultCodeAPIListed
	}
	var b strings.Builder
	b.WriteString("Call run_code with a program that calls the tools below as functions and returns only the answer: one run does the work of many tool calls. ")
	b.WriteString("language \"js\" (default): the body of an async function; `const r = await tools.fs.read({path: \"a.txt\"})`, then `return` the result. ")
	b.WriteString("language \"starlark\" (Python-like): `r = tools.fs.read(path = \"a.txt\")`, then set `result` or define `main()`. ")
	b.WriteString("A dash in a name is an underscore (tools.data.csv_to_json). `input` is run_code's input; console.log / print lines come back as log. A failed tool call throws (js: an Error with code and observation) and, uncaught, fails the program with its code. ")
	b.WriteString("`tools.search(\"words\")` returns the matching tools with their declarations.")
	if o.SearchTool != "" {
		fmt.Fprintf(&b, " The tool %s does the same outside a program.", o.SearchTool)
	}
	if len(decls) == 0 {
		b.WriteString("\n\nNo tools are callable from a program here.")
		return b.String(), nil
	}
	if len(decls) > max {
		byNS := map[string][]string{}
		var order []string
		for _, d := range decls {
			ns, name, _ := strings.Cut(d.ID, ":")
			if byNS[ns] == nil {
				order = append(order, ns)
			}
			byNS[ns] = append(byNS[ns], ident(name))
		}
		fmt.Fprintf(&b, "\n\n%d tools, by namespace (search for their declarations before you call them):", len(decls))
		for _, ns := range order {
			fmt.Fprintf(&b, "\ntools.%s: %s", ident(ns), strings.Join(byNS[ns], ", "))
		}
		return b.String(), nil
	}
	b.WriteString("\n\n```ts")
	for _, d := range decls {
		b.WriteString("\n" + d.Declaration)
	}
	b.WriteString("\n```")
	return b.String(), nil
}
