package schema_test

import (
	"testing"
)

// tenProps is the typical 10-property argument schema of the performance targets
// reference figure (santhosh v6 used naively: 8.5 µs per validation).
const tenProps = `{"type":"object","additionalProperties":false,"required":["a","b"],"properties":{
"a":{"type":"string"},"b":{"type":"integer","minimum":0},"c":{"type":"boolean"},"d":{"type":"number"},
"e":{"type":"string","enum":["x","y","z"]},"f":{"type":"array","items":{"type":"string"}},
"g":{"type":"object","properties":{"h":{"type":"string"}}},"i":{"type":"string","maxLength":100},
"j":{"type":"integer"},"k":{"type":"string"}}}`

func tenArgs() map[string]any {
	return map[string]any{"a": "hello", "b": 3.0, "c": true, "d": 1.5, "e": "x", "f": []any{"p", "q"},
		"g": map[string]any{"h": "z"}, "i": "text", "j": 7.0, "k": "kk"}
}

// BenchmarkValidate measures validating a valid 10-property object
// (the fast path).
func BenchmarkValidate(b *testing.B) {
	s := mustCompile(b, tenProps)
	v := tenArgs()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Validate(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidate_invalid measures the error path: full validation plus
// the per-field messages and a did-you-mean.
func BenchmarkValidate_invalid(b *testing.B) {
	s := mustCompile(b, tenProps)
	v := tenArgs()
	v["bb"] = v["b"]
	delete(v, "b")
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Validate(v); err == nil {
			b.Fatal("valid")
		}
	}
}

// BenchmarkCoerce measures coercing XML-born string arguments (every leaf
// a string) of the 10-property schema.
func BenchmarkCoerce(b *testing.B) {
	s := mustCompile(b, tenProps)
	v := map[string]any{"a": "hello", "b": "3", "c": "true", "d": "1.5", "e": "x", "f": "p",
		"g": map[string]any{"h": "z"}, "i": "text", "j": "7", "k": "kk"}
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Coerce(v)
	}
}

// BenchmarkCoerce_noop measures Coerce of arguments that already have the
// right types (no copy is made).
func BenchmarkCoerce_noop(b *testing.B) {
	s := mustCompile(b, tenProps)
	v := tenArgs()
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Coerce(v)
	}
}

// BenchmarkCoerceValidate is the host's per-call argument work: coerce,
// then validate.
func BenchmarkCoerceValidate(b *testing.B) {
	s := mustCompile(b, tenProps)
	v := map[string]any{"a": "hello", "b": "3", "c": "true", "d": "1.5", "e": "x", "f": "p",
		"g": map[string]any{"h": "z"}, "i": "text", "j": "7", "k": "kk"}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Validate(s.Coerce(v)); err != nil {
			b.Fatal(err)
		}
	}
}
