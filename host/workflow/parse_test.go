package workflow

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// base is a valid workflow that each bad case patches.
func base() map[string]any {
	return map[string]any{
		"id": "w", "description": "d",
		"interfaceInputs":  map[string]any{"t": map[string]any{"dataFlowType": "STRING", "required": true}},
		"interfaceOutputs": map[string]any{"o": map[string]any{"dataFlowType": "OBJECT"}},
		"nodes":            []any{map[string]any{"id": "a", "tool": "core:echo", "args": map[string]any{"x": "${inputs.t}"}}},
		"outputs":          map[string]any{"o": "${nodes.a.output}"},
	}
}

func chain(n int) []any {
	nodes := make([]any, n)
	for i := range nodes {
		args := map[string]any{}
		if i > 0 {
			args["x"] = fmt.Sprintf("${nodes.n%d.output}", i-1)
		}
		nodes[i] = map[string]any{"id": fmt.Sprintf("n%d", i), "tool": "core:echo", "args": args}
	}
	return nodes
}

func nested(depth int) any {
	var v any = "leaf"
	for range depth {
		v = map[string]any{"k": v}
	}
	return v
}

// TestParseErrors pins that every malformed workflow is a load error at
// the right place with a reason a person can act on.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		patch   func(m map[string]any)
		pointer string
		reason  string
	}{
		{name: "not JSON", raw: `{"id":`, reason: "invalid workflow JSON"},
		{name: "two values", raw: `{} {}`, reason: "invalid workflow JSON"},
		{name: "unknown field", patch: func(m map[string]any) { m["nodez"] = 1 }, reason: `unknown field "nodez"`},
		{name: "bad id", patch: func(m map[string]any) { m["id"] = "Bad Id" }, pointer: "/id", reason: "lower-case"},
		{name: "no description", patch: func(m map[string]any) { m["description"] = " " }, pointer: "/description", reason: "needs a description"},
		{name: "bad version", patch: func(m map[string]any) { m["version"] = "one" }, pointer: "/version"},
		{name: "unknown dataFlowType", patch: func(m map[string]any) {
			m["interfaceInputs"] = map[string]any{"t": map[string]any{"dataFlowType": "DECIMAL"}}
		}, pointer: "/interfaceInputs/t", reason: `dataFlowType "DECIMAL": want one of ARRAY, BOOLEAN, FLOAT, INTEGER, OBJECT, STRING`},
		{name: "combo without suggestions", patch: func(m map[string]any) {
			m["interfaceInputs"] = map[string]any{"t": map[string]any{"dataFlowType": "STRING", "matchCategories": []any{"ComboOption"}}}
		}, pointer: "/interfaceInputs/t", reason: "needs config.suggestions"},
		{name: "default outside the enum", patch: func(m map[string]any) {
			m["interfaceInputs"] = map[string]any{"t": map[string]any{"dataFlowType": "STRING", "matchCategories": []any{"ComboOption"},
				"config": map[string]any{"default": "c", "suggestions": []any{map[string]any{"value": "a"}}}}}
		}, pointer: "/interfaceInputs/t", reason: "not one of the suggestions"},
		{name: "default of the wrong type", patch: func(m map[string]any) {
			m["interfaceInputs"] = map[string]any{"t": map[string]any{"dataFlowType": "INTEGER", "config": map[string]any{"default": "x"}}}
		}, pointer: "/interfaceInputs/t", reason: "is not a integer"},
		{name: "streamed output", patch: func(m map[string]any) {
			m["interfaceOutputs"] = map[string]any{"o": map[string]any{"dataFlowType": "STRING", "isStream": true}}
		}, pointer: "/interfaceOutputs/o/isStream", reason: "async jobs API"},
		{name: "no nodes", patch: func(m map[string]any) { m["nodes"] = []any{} }, pointer: "/nodes", reason: "at least one node"},
		{name: "too many nodes", patch: func(m map[string]any) { m["nodes"] = chain(10000) }, pointer: "/nodes", reason: "10000 nodes; the limit is 256"},
		{name: "duplicate node", patch: func(m map[string]any) {
			m["nodes"] = []any{map[string]any{"id": "a", "tool": "core:echo"}, map[string]any{"id": "a", "tool": "core:echo"}}
		}, pointer: "/nodes/1/id", reason: "used twice"},
		{name: "bad tool id", patch: func(m map[string]any) {
			m["nodes"] = []any{map[string]any{"id": "a", "tool": "echo"}}
		}, pointer: "/nodes/0/tool", reason: "namespace:name"},
		{name: "calls itself", patch: func(m map[string]any) {
			m["nodes"] = []any{map[string]any{"id": "a", "tool": "workflow:w"}}
		}, pointer: "/nodes/0/tool", reason: "cannot call itself"},
		{name: "unclosed reference", patch: func(m map[string]any) {
			m["nodes"] = []any{map[string]any{"id": "a", "tool": "core:echo", "args": map[string]any{"x": "hi ${inputs.t"}}}
		}, pointer: "/nodes/0/args/x", reason: "not closed"},
		{name: "reference root", patch: func(m map[string]any) {
			m["nodes"] = []any{map[string]any{"id": "a", "tool": "core:echo", "args": map[string]any{"x": "${env.HOME}"}}}
		}, pointer: "/nodes/0/args/x", reason: "starts with inputs. or nodes."},
		{name: "node without output", patch: func(m map[string]any) {
			m["nodes"] = []any{map[string]any{"id": "a", "tool": "core:echo"}, map[string]any{"id": "b", "tool": "core:echo", "args": map[string]any{"x": "${nodes.a}"}}}
		}, pointer: "/nodes/1/args/x", reason: "${nodes.ID.output}"},
		{name: "empty segment", patch: func(m map[string]any) {
			m["nodes"] = []any{map[string]any{"id": "a", "tool": "core:echo", "args": map[string]any{"x": "${inputs..t}"}}}
		}, pointer: "/nodes/0/args/x"},
		{name: "missing input", patch: func(m map[string]any) {
			m["nodes"] = []any{map[string]any{"id": "a", "tool": "core:echo", "args": map[string]any{"x": "${inputs.nope}"}}}
		}, pointer: "/nodes/0/args/x", reason: `no input "nope" (inputs: t)`},
		{name: "missing node", patch: func(m map[string]any) {
			m["nodes"] = []any{map[string]any{"id": "a", "tool": "core:echo", "args": map[string]any{"x": "${nodes.zz.output}"}}}
		}, pointer: "/nodes/0/args/x", reason: `no node "zz" (nodes: a)`},
		{name: "self reference", patch: func(m map[string]any) {
			m["nodes"] = []any{map[string]any{"id": "a", "tool": "core:echo", "args": map[string]any{"x": "${nodes.a.output}"}}}
		}, pointer: "/nodes/0/args/x", reason: "refers to its own output"},
		{name: "cycle", patch: func(m map[string]any) {
			m["nodes"] = []any{
				map[string]any{"id": "a", "tool": "core:echo", "args": map[string]any{"x": "${nodes.c.output}"}},
				map[string]any{"id": "b", "tool": "core:echo", "args": map[string]any{"x": "${nodes.a.output}"}},
				map[string]any{"id": "c", "tool": "core:echo", "args": map[string]any{"x": "${nodes.b.output.y}"}},
			}
		}, pointer: "/nodes", reason: "cycle: a → c → b → a"},
		{name: "deep nesting", patch: func(m map[string]any) {
			m["nodes"] = []any{map[string]any{"id": "a", "tool": "core:echo", "args": map[string]any{"x": nested(100)}}}
		}, reason: "nested deeper than 64"},
		{name: "undeclared output", patch: func(m map[string]any) { m["outputs"] = map[string]any{"o": "x", "p": "y"} }, pointer: "/outputs/p", reason: "not declared"},
		{name: "output without value", patch: func(m map[string]any) { m["outputs"] = map[string]any{} }, pointer: "/outputs", reason: `"o" has no value`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := []byte(tc.raw)
			if tc.patch != nil {
				m := base()
				tc.patch(m)
				raw, _ = json.Marshal(m)
			}
			_, err := Parse(raw)
			if err == nil {
				t.Fatal("parsed")
			}
			msg := err.Error()
			if tc.pointer != "" && !strings.Contains(msg, tc.pointer+":") {
				t.Errorf("error %q lacks the pointer %s", msg, tc.pointer)
			}
			if !strings.Contains(msg, tc.reason) {
				t.Errorf("error %q lacks %q", msg, tc.reason)
			}
		})
	}
}

// TestSchemaFromInterface pins the mapping of the interface to JSON
// Schema on the summarize_text example: types, descriptions and enum
// values in Chinese kept intact, the ComboOption's suggestions as enum,
// its default, required inputs, and one output unwrapped.
func TestSchemaFromInterface(t *testing.T) {
	data, err := os.ReadFile("testdata/summarize_text.workflow.json")
	if err != nil {
		t.Fatal(err)
	}
	w, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"additionalProperties":false,"properties":{"length":{"default":"中等","description":"摘要的长度","enum":["简短","中等","详细"],"type":"string"},"text":{"description":"需要摘要的文本","type":"string"}},"required":["text"],"type":"object"}`
	if got := string(w.Parameters()); got != want {
		t.Errorf("parameters\n got %s\nwant %s", got, want)
	}
	if got := string(w.Output()); got != `{"description":"生成的摘要","type":"string"}` {
		t.Errorf("output %s", got)
	}
	if got := w.Tools(); strings.Join(got, ",") != "llm:complete,text:stats" {
		t.Errorf("tools %v", got)
	}
	two := base()
	two["interfaceOutputs"] = map[string]any{"a": map[string]any{"dataFlowType": "INTEGER"}, "b": map[string]any{"dataFlowType": "ARRAY"}}
	two["outputs"] = map[string]any{"a": "${nodes.a.output.n}", "b": "${nodes.a.output.l}"}
	raw, _ := json.Marshal(two)
	w2, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(w2.Output()); got != `{"properties":{"a":{"type":"integer"},"b":{"type":"array"}},"required":["a","b"],"type":"object"}` {
		t.Errorf("two outputs %s", got)
	}
}

// TestReferences pins reference resolution: a whole-value reference keeps
// its JSON type, text interpolation writes strings as they are and other
// values as JSON, $${ is a literal, an optional input not given leaves
// its argument out, and a path into a missing field is an error.
func TestReferences(t *testing.T) {
	w := &Workflow{nodeIndex: map[string]int{"n": 0}}
	s := &scope{w: w, inputs: map[string]any{"s": "hi", "num": json.Number("3")}, outputs: []nodeOutput{{raw: json.RawMessage(`{"l":[1,{"k":"v"}],"o":{"a":true}}`)}}}
	tests := []struct {
		in   any
		want string
	}{
		{"${inputs.num}", `3`},
		{"${nodes.n.output.l}", `[1,{"k":"v"}]`},
		{"${nodes.n.output.l.1.k}", `"v"`},
		{"${nodes.n.output}", `{"l":[1,{"k":"v"}],"o":{"a":true}}`},
		{"n=${inputs.num} s=${inputs.s} o=${nodes.n.output.o}", `"n=3 s=hi o={\"a\":true}"`},
		{"cost: $${inputs.s}", `"cost: ${inputs.s}"`},
		{map[string]any{"a": "${inputs.missing}", "b": "${inputs.s}"}, `{"b":"hi"}`},
	}
	for _, tc := range tests {
		v, err := compileValue(tc.in, "", 0)
		if err != nil {
			t.Fatalf("%v: %v", tc.in, err)
		}
		got, _, err := v.eval(s)
		if err != nil {
			t.Fatalf("%v: %v", tc.in, err)
		}
		b, _ := json.Marshal(got)
		if string(b) != tc.want {
			t.Errorf("%v = %s, want %s", tc.in, b, tc.want)
		}
	}
	for _, bad := range []string{"${nodes.n.output.nope}", "${nodes.n.output.l.7}", "${nodes.n.output.o.a.b}"} {
		v, _ := compileValue(bad, "", 0)
		if _, _, err := v.eval(s); err == nil {
			t.Errorf("%s resolved", bad)
		}
	}
}

// FuzzParse feeds arbitrary bytes to Parse: an error or a workflow, never
// a panic or a hang.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile("testdata/summarize_text.workflow.json"); err == nil {
		f.Add(data)
	}
	b, _ := json.Marshal(base())
	f.Add(b)
	f.Add([]byte(`{"id":"w","description":"d","interfaceOutputs":{"o":{"dataFlowType":"STRING"}},"nodes":[{"id":"a","tool":"a:b","args":{"x":"${nodes.a.output.$${"}}],"outputs":{"o":"${"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := Parse(data)
		if err == nil {
			_ = w.Parameters()
			_ = w.Output()
		}
	})
}
