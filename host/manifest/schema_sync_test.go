package manifest_test

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
)

// TestSchemaMatchesGoTypes keeps abi/manifest.schema.json and the Go types
// of tool.go in step: every JSON field of a Go type is a property of the
// matching schema object and vice versa, so no field can be accepted
// without being decoded (and enforced), or decoded without being checked.
func TestSchemaMatchesGoTypes(t *testing.T) {
	raw, err := abi.Schema("manifest.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	defs := doc["$defs"].(map[string]any)
	props := func(obj any) []string {
		var out []string
		for k := range obj.(map[string]any)["properties"].(map[string]any) {
			if k != "$schema" {
				out = append(out, k)
			}
		}
		sort.Strings(out)
		return out
	}
	sc := defs["securityContext"].(map[string]any)
	example := doc["properties"].(map[string]any)["examples"].(map[string]any)["items"]
	fixtures := example.(map[string]any)["properties"].(map[string]any)["fixtures"]
	scProps := sc["properties"].(map[string]any)
	tests := []struct {
		name   string
		typ    any
		schema any
	}{
		{"Tool", manifest.Tool{}, doc},
		{"Handler", manifest.Handler{}, defs["handler"]},
		{"SecurityContext", manifest.SecurityContext{}, sc},
		{"FileAccess", manifest.FileAccess{}, scProps["fileAccess"]},
		{"NetworkAccess", manifest.NetworkAccess{}, scProps["networkAccess"]},
		{"Limits", manifest.Limits{}, scProps["limits"]},
		{"Example", manifest.Example{}, example},
		{"Fixtures", manifest.Fixtures{}, fixtures},
		{"HTTPFixture", manifest.HTTPFixture{}, fixtures.(map[string]any)["properties"].(map[string]any)["http"].(map[string]any)["items"]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var fields []string
			rt := reflect.TypeOf(tc.typ)
			for i := range rt.NumField() {
				tag := strings.Split(rt.Field(i).Tag.Get("json"), ",")[0]
				if tag != "" && tag != "-" {
					fields = append(fields, tag)
				}
			}
			sort.Strings(fields)
			if got := props(tc.schema); !reflect.DeepEqual(got, fields) {
				t.Errorf("schema properties %v\n   Go json fields %v", got, fields)
			}
			if ap, ok := tc.schema.(map[string]any)["additionalProperties"]; !ok || ap != false {
				t.Error("additionalProperties is not false")
			}
		})
	}
}
