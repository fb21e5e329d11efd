package wire_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/wire"
)

// TestAdapt pins the rewrite of parameter schemas providers refuse: the
// result is an object at the top with no combinator, enum or not there,
// every property kept, and the dropped constraint stated in the note.
func TestAdapt(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		want         string // the rewritten schema
		note         string // a part of the note; "" means no note
		rewritten    bool
	}{
		{"accepted as is", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
			`{"properties":{"a":{"type":"string"}},"required":["a"],"type":"object"}`, "", false},
		{"oneOf of required sets", `{"type":"object","additionalProperties":false,"oneOf":[{"required":["csv"]},{"required":["path"]}],"properties":{"csv":{"type":"string"},"path":{"type":"string"},"header":{"type":"boolean"}}}`,
			`{"additionalProperties":false,"properties":{"csv":{"type":"string"},"header":{"type":"boolean"},"path":{"type":"string"}},"type":"object"}`, "Give exactly one of: csv; path.", true},
		{"anyOf with a shared requirement", `{"type":"object","anyOf":[{"required":["a","b","mode"]},{"required":["versions","mode"]}],"properties":{"a":{},"b":{},"versions":{},"mode":{}}}`,
			`{"properties":{"a":{},"b":{},"mode":{},"versions":{}},"required":["mode"],"type":"object"}`, "Give at least one of: a and b and mode; versions and mode.", true},
		{"oneOf of full object schemas", `{"oneOf":[{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]},{"type":"object","properties":{"y":{"type":"string"}},"required":["y"]}]}`,
			`{"properties":{"x":{"type":"integer"},"y":{"type":"string"}},"type":"object"}`, "Give exactly one of: x; y.", true},
		{"allOf merged", `{"type":"object","allOf":[{"properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"string"}},"minProperties":2}]}`,
			`{"properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"type":"object"}`, `must also match {"minProperties":2}`, true},
		{"top-level not", `{"type":"object","properties":{"a":{}},"not":{"required":["a"]}}`,
			`{"properties":{"a":{}},"type":"object"}`, `must satisfy not: {"required":["a"]}`, true},
		{"no type", `{"properties":{"a":{"type":"string"}}}`, `{"properties":{"a":{"type":"string"}},"type":"object"}`, "", true},
		{"absent", ``, `{"type":"object"}`, "", false},
		{"a root $ref", `{"$ref":"#/$defs/In","$defs":{"In":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}}`,
			`{"$defs":{"In":{"properties":{"a":{"type":"string"}},"required":["a"],"type":"object"}},"properties":{"a":{"type":"string"}},"required":["a"],"type":"object"}`, "", true},
		{"not an object", `{"type":"array"}`, `{"type":"object"}`, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := wire.Adapt(json.RawMessage(tc.schema))
			got, _ := json.Marshal(a.Schema)
			if string(got) != tc.want {
				t.Errorf("schema\n got %s\nwant %s", got, tc.want)
			}
			if tc.note == "" && a.Note != "" || !strings.Contains(a.Note, tc.note) {
				t.Errorf("note %q, want %q", a.Note, tc.note)
			}
			if (len(a.Rewrites) > 0) != tc.rewritten {
				t.Errorf("rewrites %q, want rewritten=%v", a.Rewrites, tc.rewritten)
			}
		})
	}
	// The input is left alone: the host validates against it.
	raw := json.RawMessage(`{"type":"object","oneOf":[{"required":["a"]}],"properties":{"a":{}}}`)
	wire.Adapt(raw)
	if !strings.Contains(string(raw), "oneOf") {
		t.Fatal("the manifest's schema was modified")
	}
}

// TestAdaptFirstParty rewrites every first-party and example tool: each
// comes out as a provider accepts it, and exactly the tools whose
// manifests use a top-level combinator are rewritten.
func TestAdaptFirstParty(t *testing.T) {
	var manifests []string
	for _, g := range []string{"../../toolpacks/*/*.tool.json", "../../examples/guests/*/*.tool.json"} {
		m, _ := filepath.Glob(g)
		manifests = append(manifests, m...)
	}
	if len(manifests) < 15 {
		t.Fatalf("found %d manifests", len(manifests))
	}
	var rewritten []string
	for _, p := range manifests {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			ToolID     string          `json:"toolId"`
			Parameters json.RawMessage `json:"parameters"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		a := wire.Adapt(m.Parameters)
		if a.Schema["type"] != "object" {
			t.Errorf("%s: type %v", m.ToolID, a.Schema["type"])
		}
		for _, kw := range []string{"oneOf", "anyOf", "allOf", "enum", "not"} {
			if _, ok := a.Schema[kw]; ok {
				t.Errorf("%s: top-level %s left", m.ToolID, kw)
			}
		}
		if len(a.Rewrites) > 0 {
			rewritten = append(rewritten, m.ToolID)
			if a.Note == "" {
				t.Errorf("%s: rewritten without a note", m.ToolID)
			}
		}
	}
	slices.Sort(rewritten)
	if want := []string{"data:csv-to-json", "hash:digest", "node:semver-compare", "web:extract-links"}; !slices.Equal(rewritten, want) {
		t.Errorf("rewritten %v, want %v", rewritten, want)
	}
}
