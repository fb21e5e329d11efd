package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/llm"
)

// codeModeHost is a host over the code, fs and core toolpacks with a
// small workspace and tight limits for the programs (an endless
// JavaScript loop ends at 5 s, a Starlark one at its step budget), every
// tool warmed so that the programs run on the compiled tier.
func codeModeHost(t testing.TB) *host.Host {
	t.Helper()
	ws := t.TempDir()
	for name, text := range map[string]string{"a.txt": "alpha", "b.txt": "beta"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tp := hosttest.Toolpacks(t)
	p := hosttest.Policy(t, "workspace: "+ws+`
fileAccess: {allowRead: ["*.txt"]}
tools:
  "code:starlark":
    config: {maxSteps: "200000", maxCalls: "10"}
    limits: {max: {memoryMb: 64}}
  "code:js":
    config: {maxCalls: "10"}
    limits: {max: {timeoutMs: 5000}}
`)
	h := hosttest.NewHost(t, p, filepath.Join(tp, "code"), filepath.Join(tp, "fs"), filepath.Join(tp, "core"))
	h.Warm(context.Background(), host.WarmOptions{})
	return h
}

// runCodeTurn is a replay turn that calls run_code with args.
func runCodeTurn(t testing.TB, args map[string]any) string {
	t.Helper()
	a, _ := json.Marshal(args)
	b, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{"id": "m1", "name": "run_code", "arguments": string(a)}}})
	return string(b)
}

// TestCodeMode runs a program in agent mode code: the model is offered
// run_code alone and the typed API in its system prompt; the program's
// inner calls are steps of the run under the run_code call, and the
// model reads the program's result.
func TestCodeMode(t *testing.T) {
	h := codeModeHost(t)
	for _, lang := range []string{"js", "starlark"} {
		t.Run(lang, func(t *testing.T) {
			code := "const a = await tools.fs.read({path: 'a.txt'});\nconst b = await call('fs:read', {path: 'b.txt'});\nreturn a.content + '+' + b.content"
			if lang == "starlark" {
				code = "a = tools.fs.read(path = 'a.txt')\nb = call('fs:read', path = 'b.txt')\nresult = a['content'] + '+' + b['content']"
			}
			p := replay(t, runCodeTurn(t, map[string]any{"code": code, "language": lang}), `{"content":"alpha+beta"}`)
			res, err := agent.Run(context.Background(), h, "join the files", agent.Options{Provider: p, Mode: agent.ModeCode})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != "done" || len(res.Steps) != 3 {
				t.Fatalf("result %+v", res)
			}
			run := res.Steps[2]
			if run.ToolName != "run_code" || run.Status != "success" || !strings.Contains(string(run.Result), `"result":"alpha+beta"`) {
				t.Fatalf("run_code step %+v", run)
			}
			for i, s := range res.Steps[:2] {
				if s.ToolName != "fs:read" || s.Status != "success" || s.ParentCallID != run.ToolCallID || s.ToolCallID == run.ToolCallID {
					t.Fatalf("inner step %d %+v (run_code %s)", i, s, run.ToolCallID)
				}
			}
			first := p.Requests[0]
			if len(first.Tools) != 1 || first.Tools[0].Name != "run_code" {
				t.Fatalf("tools sent %+v", first.Tools)
			}
			sys := first.Messages[0].Content
			if !strings.Contains(sys, "tools.fs.read(args: {") || !strings.Contains(sys, "tools.core.echo(") || strings.Contains(sys, "tools.code.") {
				t.Fatalf("system prompt without the typed API (or with code tools):\n%s", sys)
			}
			last := p.Requests[1].Messages
			if m := last[len(last)-1]; m.Role != llm.RoleTool || !strings.Contains(m.Content, `"result":"alpha+beta"`) {
				t.Fatalf("the model read %+v", m)
			}
		})
	}
}

// TestCodeModeInventory holds a program to the run's tools: a tool
// outside the profile's inventory is absent from the API and denied
// when a program calls it anyway.
func TestCodeModeInventory(t *testing.T) {
	h := codeModeHost(t)
	p := replay(t, runCodeTurn(t, map[string]any{"code": "try { await tools.core.echo({a: 1}); return 'ran' } catch (e) { return e.code }"}), `{"content":"denied"}`)
	res, err := agent.Run(context.Background(), h, "echo", agent.Options{Provider: p, Mode: agent.ModeCode, Tools: []string{"fs:read"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != 2 || res.Steps[0].Error == nil || res.Steps[0].Error.Code != abi.CodePermissionDenied ||
		!strings.Contains(string(res.Steps[1].Result), `"result":"PERMISSION_DENIED"`) {
		t.Fatalf("steps %+v", res.Steps)
	}
	if sys := p.Requests[0].Messages[0].Content; strings.Contains(sys, "core.echo") || !strings.Contains(sys, "fs.read") {
		t.Fatalf("system prompt:\n%s", sys)
	}
}

// TestCodeModeBadPrograms sends every way a program goes wrong through
// agent mode: each ends the run_code call with its own code, and the
// model reads an observation it can act on.
func TestCodeModeBadPrograms(t *testing.T) {
	h := codeModeHost(t)
	tests := []struct {
		name, lang, code string
		args             map[string]any // instead of code and lang
		want             abi.Code
		text             []string // in the observation the model reads
		inner            int      // inner steps recorded
	}{
		{name: "js syntax error", lang: "js", code: "let x = 1;\nreturn (1 +;", want: abi.CodeInvalidArguments, text: []string{"line 2", "column"}},
		{name: "starlark syntax error", lang: "starlark", code: "x = 1\nresult = (1 +", want: abi.CodeInvalidArguments, text: []string{"line 2, column"}},
		{name: "js throw", lang: "js", code: "throw new Error('boom')", want: abi.CodeToolError, text: []string{"boom"}},
		{name: "starlark fail", lang: "starlark", code: "fail('boom')", want: abi.CodeToolError, text: []string{"boom"}},
		{name: "js endless loop", lang: "js", code: "for (;;) {}", want: abi.CodeTimeout, text: []string{"5000 ms"}},
		{name: "starlark endless loop", lang: "starlark", code: "while True:\n    pass", want: abi.CodeFuelExhausted, text: []string{"endless loop"}},
		{name: "js huge result", lang: "js", code: "return 'x'.repeat(3 << 19)", want: abi.CodeOutputLimit},
		{name: "starlark huge result", lang: "starlark", code: "result = 'x' * (3 << 19)", want: abi.CodeOutputLimit},
		{name: "js recursion into run_code", lang: "js", code: "return await call('run_code', {code: 'return 1'})", want: abi.CodePermissionDenied, text: []string{"cannot call run_code", "do not nest"}, inner: 1},
		{name: "js recursion into a code tool", lang: "js", code: "return await tools.code.js({code: 'return 1'})", want: abi.CodePermissionDenied, text: []string{"cannot call code:js", "do not nest"}, inner: 1},
		{name: "starlark recursion into run_code", lang: "starlark", code: "result = call('run_code', code = 'result = 1')", want: abi.CodePermissionDenied, text: []string{"cannot call run_code"}, inner: 1},
		{name: "unknown language", args: map[string]any{"code": "1", "language": "ruby"}, want: abi.CodeInvalidArguments, text: []string{"ruby"}},
		{name: "unknown argument", args: map[string]any{"code": "1", "lang": "js"}, want: abi.CodeInvalidArguments, text: []string{"lang"}},
		{name: "empty code", args: map[string]any{"code": " "}, want: abi.CodeInvalidArguments, text: []string{"empty"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if args == nil {
				args = map[string]any{"code": tc.code, "language": tc.lang}
			}
			p := replay(t, runCodeTurn(t, args), `{"content":"gave up"}`)
			res, err := agent.Run(context.Background(), h, "x", agent.Options{Provider: p, Mode: agent.ModeCode})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Steps) != tc.inner+1 {
				t.Fatalf("%d steps, want %d: %+v", len(res.Steps), tc.inner+1, res.Steps)
			}
			run := res.Steps[tc.inner]
			if run.ToolName != "run_code" || run.Error == nil || run.Error.Code != tc.want {
				t.Fatalf("run_code step %+v, want %s", run, tc.want)
			}
			if tc.inner > 0 && res.Steps[0].Error.Code != tc.want {
				t.Fatalf("the nested call's step %+v", res.Steps[0])
			}
			if d, _ := run.Error.Details.(map[string]any); tc.want == abi.CodePermissionDenied && d["nested"] != true {
				t.Fatalf("a nested program without details.nested: %+v", run.Error)
			}
			msgs := p.Requests[1].Messages
			obs := msgs[len(msgs)-1].Content
			for _, w := range tc.text {
				if !strings.Contains(obs, w) {
					t.Fatalf("observation %q lacks %q", obs, w)
				}
			}
		})
	}
}
