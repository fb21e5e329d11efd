package host

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
)

// TestOutput: the output schema holds for every kind of output, whether
// or not the schema takes any object (whose object outputs are not
// decoded again).
func TestOutput(t *testing.T) {
	tool := func(t *testing.T, outputSchema string) *manifest.Tool {
		t.Helper()
		m := `{"toolId":"t:out","displayName":"Out","version":"1.0.0","description":"Test tool whose output schema is checked.",
			"handler":{"type":"wasm","module":"x.wasm","abi":"wasi-command"},
			"parameters":{"type":"object"}`
		if outputSchema != "" {
			m += `,"output":` + outputSchema
		}
		tl, err := manifest.Parse([]byte(m+"}"), "/nowhere/out.tool.json")
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	anyObject := `{"type":"object","additionalProperties":true}`
	needsA := `{"type":"object","required":["a"]}`
	tests := []struct {
		name, schema, raw, want string // want: the output, or the error's code
	}{
		{"any object: object", anyObject, ` {"b": [1, 2]} `, `{"b":[1,2]}`},
		{"any object: array", anyObject, `[1]`, string(abi.CodeInvalidOutput)},
		{"any object: string", anyObject, `"x"`, string(abi.CodeInvalidOutput)},
		{"any object: empty", anyObject, ``, string(abi.CodeInvalidOutput)},
		{"any object: broken", anyObject, `{"b":`, string(abi.CodeInvalidOutput)},
		{"required: present", needsA, `{"a":1}`, `{"a":1}`},
		{"required: missing", needsA, `{"b":1}`, string(abi.CodeInvalidOutput)},
		{"no schema: array", "", `[1]`, `[1]`},
		{"no schema: empty", "", `  `, `null`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl := tool(t, tc.schema)
			if tc.schema != "" && (tl.OutputSchema().AnyObject() != (tc.schema == anyObject)) {
				t.Fatalf("AnyObject() = %v", tl.OutputSchema().AnyObject())
			}
			out, err := output(tl, []byte(tc.raw))
			got := string(out)
			if err != nil {
				got = string(err.Code)
			}
			if got != tc.want {
				t.Fatalf("output(%q) = %s (%v), want %s", tc.raw, got, err, tc.want)
			}
			if err != nil && !strings.Contains(err.Message, "output") {
				t.Fatalf("message %q", err.Message)
			}
		})
	}
}
