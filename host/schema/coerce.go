package schema

import (
	"encoding/json"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// maxCoerceDepth bounds how deep Coerce descends into a value; deeper
// parts are returned unchanged (and validation then judges them).
const maxCoerceDepth = 512

// maxRefHops bounds how many $ref / allOf / anyOf links Coerce follows at
// one level of the value, so a recursive $ref cannot loop.
const maxRefHops = 16

// Coerce returns v converted where the schema asks for another type than
// the one v has, so that XML-born string arguments
// validate:
//
//   - a string becomes an integer or number (as json.Number, exact) when it
//     is a JSON number, or a boolean when it is "true" or "false" (any case),
//     or null when it is "null" and null is allowed;
//   - a string holding JSON text becomes an object or array where one is
//     expected ("{...}" / "[...]");
//   - any other single value becomes a one-element array where an array is
//     expected.
//
// Conversion happens only when the value's own type is not allowed, so a
// schema of type ["string","integer"] keeps "5" a string. Coerce follows
// properties, patternProperties, additionalProperties, items, prefixItems,
// $ref and allOf (and anyOf/oneOf for the allowed types). It never panics,
// never modifies v (changed maps and slices are copies), and is idempotent:
// Coerce(Coerce(v)) equals Coerce(v). What it cannot convert it leaves for
// Validate to report.
func (s *Schema) Coerce(v any) any {
	out, _ := s.coerce(s.js, v, 0)
	return out
}

// kind bits of a JSON value, for coercion (integer counts as number).
const (
	kNull uint8 = 1 << iota
	kBool
	kInt
	kNum
	kStr
	kArr
	kObj
)

func (s *Schema) coerce(sch *jsonschema.Schema, v any, depth int) (any, bool) {
	if sch == nil || depth > maxCoerceDepth {
		return v, false
	}
	changed := false
	want, ok := s.kinds[sch]
	if !ok {
		want = allowedKinds(sch, 0)
	}
	if want != 0 && !allows(want, v) {
		if nv, ok := convert(want, v); ok {
			v, changed = nv, true
		}
	}
	switch x := v.(type) {
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			ne, ch := s.coerce(propertySchema(sch, k, 0), e, depth+1)
			if !ch {
				continue
			}
			if out == nil {
				out = make(map[string]any, len(x))
				for k2, e2 := range x {
					out[k2] = e2
				}
			}
			out[k] = ne
		}
		if out != nil {
			return out, true
		}
	case []any:
		var out []any
		for i, e := range x {
			ne, ch := s.coerce(itemSchema(sch, i, 0), e, depth+1)
			if !ch {
				continue
			}
			if out == nil {
				out = make([]any, len(x))
				copy(out, x)
			}
			out[i] = ne
		}
		if out != nil {
			return out, true
		}
	}
	return v, changed
}

// convert turns v into a value of one of the wanted kinds, or reports false.
func convert(want uint8, v any) (any, bool) {
	if str, ok := v.(string); ok {
		t := strings.TrimSpace(str)
		if want&kObj != 0 && strings.HasPrefix(t, "{") {
			if d, err := decode([]byte(t)); err == nil {
				if m, ok := d.(map[string]any); ok {
					return m, true
				}
			}
		}
		if want&kArr != 0 && strings.HasPrefix(t, "[") {
			if d, err := decode([]byte(t)); err == nil {
				if a, ok := d.([]any); ok {
					return a, true
				}
			}
		}
		if want&(kInt|kNum) != 0 && isJSONNumber(t) {
			return json.Number(t), true
		}
		if want&kBool != 0 {
			switch strings.ToLower(t) {
			case "true":
				return true, true
			case "false":
				return false, true
			}
		}
		if want&kNull != 0 && t == "null" {
			return nil, true
		}
	}
	if want&kArr != 0 && v != nil {
		if _, isArr := v.([]any); !isArr {
			return []any{v}, true
		}
	}
	return v, false
}

// allows reports whether v's kind is among want.
func allows(want uint8, v any) bool {
	switch v.(type) {
	case nil:
		return want&kNull != 0
	case bool:
		return want&kBool != 0
	case string:
		return want&kStr != 0
	case []any:
		return want&kArr != 0
	case map[string]any:
		return want&kObj != 0
	}
	if isNumeric(v) {
		return want&(kInt|kNum) != 0
	}
	return true // not a JSON value: leave it to Validate
}

func isNumeric(v any) bool {
	switch v.(type) {
	case float64, float32, json.Number, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64:
		return true
	}
	return false
}

// allowedKinds is the set of kinds sch allows, 0 when unconstrained: its
// own "type", else that of its $ref or allOf members, else the union of its
// anyOf / oneOf members.
func allowedKinds(sch *jsonschema.Schema, hops int) uint8 {
	if sch == nil || hops > maxRefHops {
		return 0
	}
	if sch.Types != nil && !sch.Types.IsEmpty() {
		var k uint8
		for _, t := range sch.Types.ToStrings() {
			switch t {
			case "null":
				k |= kNull
			case "boolean":
				k |= kBool
			case "integer":
				k |= kInt
			case "number":
				k |= kNum
			case "string":
				k |= kStr
			case "array":
				k |= kArr
			case "object":
				k |= kObj
			}
		}
		return k
	}
	if k := allowedKinds(sch.Ref, hops+1); k != 0 {
		return k
	}
	for _, a := range sch.AllOf {
		if k := allowedKinds(a, hops+1); k != 0 {
			return k
		}
	}
	var union uint8
	for _, group := range [][]*jsonschema.Schema{sch.AnyOf, sch.OneOf} {
		for _, a := range group {
			k := allowedKinds(a, hops+1)
			if k == 0 {
				return 0 // one branch takes anything: no coercion
			}
			union |= k
		}
	}
	return union
}

// propertySchema finds the schema of property key: properties, then
// patternProperties, then the same in $ref and allOf members, then
// additionalProperties.
func propertySchema(sch *jsonschema.Schema, key string, hops int) *jsonschema.Schema {
	if sch == nil || hops > maxRefHops {
		return nil
	}
	if p, ok := sch.Properties[key]; ok {
		return p
	}
	if len(sch.PatternProperties) > 0 {
		// the lowest matching pattern (by source text), so the choice
		// does not depend on map order
		var best *jsonschema.Schema
		bestSrc := ""
		for re, p := range sch.PatternProperties {
			if src := re.String(); re.MatchString(key) && (best == nil || src < bestSrc) {
				best, bestSrc = p, src
			}
		}
		if best != nil {
			return best
		}
	}
	if p := propertySchema(sch.Ref, key, hops+1); p != nil {
		return p
	}
	for _, a := range sch.AllOf {
		if p := propertySchema(a, key, hops+1); p != nil {
			return p
		}
	}
	if p, ok := sch.AdditionalProperties.(*jsonschema.Schema); ok {
		return p
	}
	return nil
}

// itemSchema finds the schema of array item i: prefixItems / items (both
// drafts), then $ref and allOf members.
func itemSchema(sch *jsonschema.Schema, i, hops int) *jsonschema.Schema {
	if sch == nil || hops > maxRefHops {
		return nil
	}
	if i < len(sch.PrefixItems) {
		return sch.PrefixItems[i]
	}
	if sch.Items2020 != nil {
		return sch.Items2020
	}
	switch it := sch.Items.(type) {
	case *jsonschema.Schema:
		return it
	case []*jsonschema.Schema:
		if i < len(it) {
			return it[i]
		}
		if p, ok := sch.AdditionalItems.(*jsonschema.Schema); ok {
			return p
		}
		return nil
	}
	if p := itemSchema(sch.Ref, i, hops+1); p != nil {
		return p
	}
	for _, a := range sch.AllOf {
		if p := itemSchema(a, i, hops+1); p != nil {
			return p
		}
	}
	return nil
}

// isJSONNumber reports whether s is a number in JSON syntax.
func isJSONNumber(s string) bool {
	i, n := 0, len(s)
	if i < n && s[i] == '-' {
		i++
	}
	if i >= n {
		return false
	}
	switch {
	case s[i] == '0':
		i++
	case s[i] >= '1' && s[i] <= '9':
		for i < n && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < n && s[i] == '.' {
		i++
		start := i
		for i < n && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < n && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < n && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == n
}
