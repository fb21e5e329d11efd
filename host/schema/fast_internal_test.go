package schema

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// fastSchemas all use only keywords the fast path implements.
var fastSchemas = []string{
	`{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"integer","minimum":1,"maximum":10},"b":{"type":"string","minLength":2,"maxLength":3,"pattern":"^x"},"c":{"enum":["p",1,true,null]},"d":{"type":"array","items":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":2},"minItems":1,"maxItems":2},"e":{"const":"k"}}}`,
	`{"type":["object","null"],"minProperties":1,"maxProperties":2,"patternProperties":{"^n":{"type":"number"}},"additionalProperties":{"type":"boolean"}}`,
	`{"$defs":{"t":{"type":"object","properties":{"v":{"type":"integer"},"k":{"type":"array","items":{"$ref":"#/$defs/t"}}}}},"$ref":"#/$defs/t"}`,
	`{"allOf":[{"type":"object","required":["a"]},{"properties":{"a":{"type":"string"}}}],"anyOf":[{"required":["b"]},{"required":["c"]}]}`,
	`{"type":"array","items":{"anyOf":[{"type":"string"},{"type":"integer","minimum":-1}]}}`,
	`false`,
	`{"properties":{"a":false,"b":true}}`,
}

// randomValue builds a small random JSON value with keys and scalars that
// hit the constraints above.
func randomValue(r *rand.Rand, depth int) any {
	keys := []string{"a", "b", "c", "d", "e", "n1", "v", "k", "z"}
	scalars := []any{nil, true, false, "p", "x", "xy", "xyz", "xyzw", "k", "", 0.0, 1.0, 1.5, 2.0, 10.0, 11.0, -1.0, -2.0,
		json.Number("1"), json.Number("1.0"), json.Number("3"), json.Number("1e400"), json.Number("12345678901234567890"), int64(5), 7,
		json.Number("1.5"), json.Number("-0.5"), json.Number("2.0000"), json.Number("10.0000000000000001"), json.Number("0.99999999999999999"), json.Number("1E2")}
	switch n := r.IntN(10); {
	case depth > 3 || n < 5:
		return scalars[r.IntN(len(scalars))]
	case n < 7:
		a := make([]any, r.IntN(4))
		for i := range a {
			a[i] = randomValue(r, depth+1)
		}
		return a
	default:
		m := map[string]any{}
		for range r.IntN(4) {
			m[keys[r.IntN(len(keys))]] = randomValue(r, depth+1)
		}
		return m
	}
}

func TestFastPath_agreesWithValidator(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i, raw := range fastSchemas {
		s, err := Compile(json.RawMessage(raw), "mem://fast/test")
		if err != nil {
			t.Fatalf("schema %d: %v", i, err)
		}
		if !s.Fast() {
			t.Fatalf("schema %d does not use the fast path", i)
		}
		fastYes, slowYes := 0, 0
		for range 3000 {
			v := randomValue(r, 0)
			fast := s.fast.valid(v, 0)
			slow := s.js.Validate(v) == nil
			if fast && !slow {
				b, _ := json.Marshal(v)
				t.Fatalf("schema %d: fast path accepted %s (%#v), the validator rejects it", i, b, v)
			}
			if fast {
				fastYes++
			}
			if slow {
				slowYes++
			}
		}
		// the fast path must actually decide most valid values
		if slowYes > 0 && fastYes*2 < slowYes {
			t.Errorf("schema %d: fast path accepted %d of %d valid values", i, fastYes, slowYes)
		}
	}
}

func TestFastPath_fallsBack(t *testing.T) {
	for _, raw := range []string{
		`{"oneOf":[{"type":"string"},{"type":"integer"}]}`,
		`{"not":{"type":"string"}}`,
		`{"if":{"type":"string"},"then":{"minLength":1}}`,
		`{"type":"array","uniqueItems":true}`,
		`{"multipleOf":0.1}`,
		`{"enum":[[1],{"a":1}]}`,
		`{"maximum":0.1}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","$ref":"#/definitions/a","definitions":{"a":{}}}`,
		`{"type":"object","unevaluatedProperties":false}`,
		`{"dependentRequired":{"a":["b"]}}`,
	} {
		s, err := Compile(json.RawMessage(raw), "mem://fast/fallback")
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if s.Fast() {
			t.Errorf("%s: uses the fast path, which does not implement it", raw)
		}
	}
}
