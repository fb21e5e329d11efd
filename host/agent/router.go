package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/observation"
)

// routerDef is the router mode's one tool: a thin schema naming the
// modules (namespaces); the methods and their schemas come on demand
// through tools.describe (progressive disclosure).
func routerDef(ids []string) llm.ToolDef {
	mods := map[string]bool{}
	for _, id := range ids {
		ns, _, _ := strings.Cut(id, ":")
		mods[ns] = true
	}
	var names []string
	for m := range mods {
		names = append(names, m)
	}
	sort.Strings(names)
	params, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"module": map[string]any{"type": "string", "description": "a module (tool namespace), or \"tools\" for describe", "enum": append([]string{RouterTool}, names...)},
			"method": map[string]any{"type": "string", "description": "the method (tool name); with module \"tools\": describe"},
			"input":  map[string]any{"type": "object", "description": "the method's arguments; for describe: {\"module\": \"…\"}"},
		},
		"required": []string{"module", "method"},
	})
	return llm.ToolDef{
		Name: RouterTool,
		Description: "Calls the method of a module: {module, method, input}. Modules: " + strings.Join(names, ", ") +
			`. To learn a module's methods and their input schemas, call {"module":"tools","method":"describe","input":{"module":"<module>"}}.`,
		Parameters: params,
	}
}

// route runs one call of the router tool.
func (r *run) route(ctx context.Context, tc llm.ToolCall) (ToolAgentOutput, string) {
	var a struct {
		Module string          `json:"module"`
		Method string          `json:"method"`
		Input  json.RawMessage `json:"input"`
	}
	args := json.RawMessage(tc.Arguments)
	if err := json.Unmarshal(args, &a); err != nil || a.Module == "" || a.Method == "" {
		e := abi.Errorf(abi.CodeInvalidArguments, `the tools tool takes {"module", "method", "input"}; call {"module":"tools","method":"describe","input":{"module":"…"}} to see a module's methods`)
		return stepOf(RouterTool, tc.ID, args, abi.Failure(RouterTool, e)), observation.Error(RouterTool, e)
	}
	if a.Module == RouterTool && a.Method == "describe" {
		var in struct {
			Module string `json:"module"`
		}
		_ = json.Unmarshal(a.Input, &in)
		out, err := r.describe(in.Module)
		if err != nil {
			return stepOf(RouterTool, tc.ID, args, abi.Failure(RouterTool, err)), observation.Error(RouterTool, err)
		}
		env := abi.Envelope{ToolID: RouterTool, Status: abi.StatusSuccess, Output: out}
		return stepOf(RouterTool, tc.ID, args, env), string(out)
	}
	id := a.Module + ":" + a.Method
	if r.byID[id] == nil {
		e := abi.Errorf(abi.CodeUnknownTool, "module %q has no method %q%s", a.Module, a.Method, r.methodsOf(a.Module))
		return stepOf(id, tc.ID, args, abi.Failure(id, e)), observation.Error(id, e)
	}
	input := a.Input
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	out, text := r.callTool(ctx, tc.ID, mustName(r, id), string(input))
	if out.Error != nil && out.Error.Code == abi.CodeInvalidArguments {
		// Bad input is answered with the method's schema, so the model
		// can fix the call without another describe.
		text += "\ninput_schema of " + a.Module + "." + a.Method + ": " + string(schemaOf(r, id))
	}
	return out, text
}

func mustName(r *run, id string) string {
	n, _ := r.table.Name(id)
	return n
}

func schemaOf(r *run, id string) json.RawMessage {
	if p := r.byID[id].Parameters; len(p) > 0 {
		return p
	}
	return json.RawMessage(`{"type":"object"}`)
}

// describe lists a module's methods with their descriptions and input
// schemas.
func (r *run) describe(module string) (json.RawMessage, *abi.Error) {
	type method struct {
		Method      string          `json:"method"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	var ms []method
	for _, id := range sortedKeys(r.byID) {
		ns, name, _ := strings.Cut(id, ":")
		if ns == module {
			ms = append(ms, method{Method: name, Description: r.byID[id].Description, InputSchema: schemaOf(r, id)})
		}
	}
	if len(ms) == 0 {
		return nil, abi.Errorf(abi.CodeUnknownTool, "no module %q%s", module, r.moduleList())
	}
	b, _ := json.Marshal(map[string]any{"module": module, "methods": ms})
	return b, nil
}

func (r *run) methodsOf(module string) string {
	var names []string
	for _, id := range sortedKeys(r.byID) {
		if ns, name, _ := strings.Cut(id, ":"); ns == module {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return r.moduleList()
	}
	return "; its methods: " + strings.Join(names, ", ")
}

func (r *run) moduleList() string {
	mods := map[string]bool{}
	for id := range r.byID {
		ns, _, _ := strings.Cut(id, ":")
		mods[ns] = true
	}
	return fmt.Sprintf("; the modules: %s", strings.Join(sortedKeys(mods), ", "))
}
