package schema_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/schema"
)

// nested builds a schema whose property "a" refers to a chain of n
// definitions, each applying the next one twice through the keyword
// (anyOf, allOf, oneOf or all three): 2^n evaluations per value.
func nested(shape string, n int) json.RawMessage {
	defs := map[string]any{}
	for i := 0; i < n; i++ {
		r := map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", i+1)}
		if shape == "mixed" {
			defs[fmt.Sprintf("d%d", i)] = map[string]any{"anyOf": []any{r, r}, "allOf": []any{r}, "oneOf": []any{r, r}}
		} else {
			defs[fmt.Sprintf("d%d", i)] = map[string]any{shape: []any{r, r}}
		}
	}
	defs[fmt.Sprintf("d%d", n)] = map[string]any{"type": "string"}
	raw, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/d0"}}, "$defs": defs})
	return raw
}

// TestFanoutRefused pins the exponential-schema defence: a schema of about
// 1 KB that nests $ref / anyOf / allOf / oneOf 16 deep is refused at
// compile time (loading its folder hung), while a wide but flat schema and
// a recursive tree schema compile.
func TestFanoutRefused(t *testing.T) {
	for _, shape := range []string{"anyOf", "allOf", "oneOf", "mixed"} {
		t.Run(shape, func(t *testing.T) {
			_, err := schema.Compile(nested(shape, 16), "mem://x")
			if err == nil || !strings.Contains(err.Error(), "too complex") {
				t.Fatalf("got %v, want a too-complex error", err)
			}
			if _, err := schema.Compile(nested(shape, 3), "mem://y"); err != nil {
				t.Fatalf("a shallow chain: %v", err)
			}
		})
	}
	wide := `{"anyOf": [` + strings.TrimSuffix(strings.Repeat(`{"type":"string","maxLength":3},`, 500), ",") + `]}`
	if _, err := schema.Compile(json.RawMessage(wide), "mem://wide"); err != nil {
		t.Fatalf("500 flat alternatives: %v", err)
	}
	tree := `{"$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}},"$ref":"#/$defs/node"}`
	s, err := schema.Compile(json.RawMessage(tree), "mem://tree")
	if err != nil {
		t.Fatalf("a recursive tree schema: %v", err)
	}
	if err := s.Validate(map[string]any{"name": "a", "children": []any{map[string]any{"name": "b"}}}); err != nil {
		t.Fatalf("tree value: %v", err)
	}
}

// BenchmarkFanoutRefusal shows that refusing a multiplying schema costs
// time linear in its depth (16, 64, 256 levels), never exponential.
func BenchmarkFanoutRefusal(b *testing.B) {
	for _, n := range []int{16, 64, 256} {
		raw := nested("mixed", n)
		b.Run(fmt.Sprintf("depth%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := schema.Compile(raw, "mem://x"); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}
