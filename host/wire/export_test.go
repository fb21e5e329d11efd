package wire_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/wire"
)

// TestStrict pins OpenAI's strict rule on hand-written schemas and on
// every first-party tool's parameters: strict only for a closed schema
// that requires every property and uses only the keywords strict mode
// knows.
func TestStrict(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   bool
	}{
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`, true},
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, false},
		{`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a"],"additionalProperties":false}`, false},
		{`{"type":"object","properties":{"a":{"type":"string","default":"x"}},"required":["a"],"additionalProperties":false}`, false},
		{`{"type":"object","properties":{"a":{"type":"object","properties":{},"required":[],"additionalProperties":false}},"required":["a"],"additionalProperties":false}`, true},
		{`{"type":"object","properties":{"a":{"type":"object"}},"required":["a"],"additionalProperties":false}`, false},
	} {
		var m map[string]any
		if err := json.Unmarshal([]byte(tc.schema), &m); err != nil {
			t.Fatal(err)
		}
		if got := wire.Strict(m); got != tc.want {
			t.Errorf("Strict(%s) = %v, want %v", tc.schema, got, tc.want)
		}
	}
	manifests, _ := filepath.Glob("../../toolpacks/*/*.tool.json")
	if len(manifests) < 10 {
		t.Fatalf("found %d first-party manifests", len(manifests))
	}
	for _, p := range manifests {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			ToolID     string         `json:"toolId"`
			Parameters map[string]any `json:"parameters"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		// Every first-party tool has optional parameters with defaults, so
		// none fits the strict subset: strict must not be claimed.
		if wire.Strict(m.Parameters) {
			t.Errorf("%s: strict claimed for a schema with optional parameters", m.ToolID)
		}
	}
}

// TestExport renders one definition in each format: $schema only for
// MCP, Gemini's schema as parametersJsonSchema.
func TestExport(t *testing.T) {
	defs := []wire.Def{{ID: "core:echo", Title: "Echo", Description: "Echoes.",
		Parameters: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`),
		Output:     json.RawMessage(`{"type":"object"}`)}}
	want := map[string]string{
		"openai":    `[{"function":{"description":"Echoes.","name":"core__echo","parameters":{"additionalProperties":false,"properties":{"a":{"type":"string"}},"required":["a"],"type":"object"},"strict":true},"type":"function"}]`,
		"anthropic": `[{"description":"Echoes.","input_schema":{"additionalProperties":false,"properties":{"a":{"type":"string"}},"required":["a"],"type":"object"},"name":"core__echo"}]`,
		"mcp":       `[{"description":"Echoes.","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":false,"properties":{"a":{"type":"string"}},"required":["a"],"type":"object"},"name":"core__echo","outputSchema":{"type":"object"},"title":"Echo"}]`,
		"gemini":    `{"functionDeclarations":[{"description":"Echoes.","name":"core__echo","parametersJsonSchema":{"additionalProperties":false,"properties":{"a":{"type":"string"}},"required":["a"],"type":"object"}}]}`,
	}
	for _, f := range wire.Formats {
		out, err := wire.Export(f, defs)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(out)
		if string(b) != want[f] {
			t.Errorf("%s:\n got %s\nwant %s", f, b, want[f])
		}
	}
	if _, err := wire.Export("palm", defs); err == nil || !strings.Contains(err.Error(), "unknown format") {
		t.Fatalf("unknown format: %v", err)
	}
}

// TestExportRewrites exports a tool whose manifest has a top-level oneOf:
// no format carries it, and every format's description states it.
func TestExportRewrites(t *testing.T) {
	defs := []wire.Def{{ID: "hash:digest", Description: "Hashes.",
		Parameters: json.RawMessage(`{"type":"object","oneOf":[{"required":["text"]},{"required":["path"]}],"properties":{"text":{"type":"string"},"path":{"type":"string"}}}`)}}
	for _, f := range wire.Formats {
		out, err := wire.Export(f, defs)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(out)
		if strings.Contains(string(b), "oneOf") || !strings.Contains(string(b), `Hashes. Give exactly one of: text; path.`) {
			t.Errorf("%s: %s", f, b)
		}
	}
}
