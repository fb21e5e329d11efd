package schema

import (
	"encoding/json"
	"testing"
)

// BenchmarkValidate_santhosh is the reference of the performance targets: the same
// 10-property validation with santhosh v6 used directly (no fast path), to
// read BenchmarkValidate as a ratio measured in the same run.
func BenchmarkValidate_santhosh(b *testing.B) {
	s, err := Compile(json.RawMessage(`{"type":"object","additionalProperties":false,"required":["a","b"],"properties":{
"a":{"type":"string"},"b":{"type":"integer","minimum":0},"c":{"type":"boolean"},"d":{"type":"number"},
"e":{"type":"string","enum":["x","y","z"]},"f":{"type":"array","items":{"type":"string"}},
"g":{"type":"object","properties":{"h":{"type":"string"}}},"i":{"type":"string","maxLength":100},
"j":{"type":"integer"},"k":{"type":"string"}}}`), "mem://bench/ref")
	if err != nil {
		b.Fatal(err)
	}
	v := map[string]any{"a": "hello", "b": 3.0, "c": true, "d": 1.5, "e": "x", "f": []any{"p", "q"},
		"g": map[string]any{"h": "z"}, "i": "text", "j": 7.0, "k": "kk"}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.js.Validate(v); err != nil {
			b.Fatal(err)
		}
	}
}
