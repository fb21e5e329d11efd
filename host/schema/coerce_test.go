package schema_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agenthost/agenthost/host/schema"
)

const coerceSchema = `{
  "type": "object",
  "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}}},
  "properties": {
    "n": {"type": "integer"},
    "f": {"type": "number"},
    "b": {"type": "boolean"},
    "s": {"type": "string"},
    "sn": {"type": ["string", "integer"]},
    "nb": {"type": ["integer", "null"]},
    "obj": {"type": "object", "properties": {"k": {"type": "integer"}}},
    "arr": {"type": "array", "items": {"type": "integer"}},
    "strs": {"type": "array", "items": {"type": "string"}},
    "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
    "ref": {"$ref": "#/$defs/point"},
    "all": {"allOf": [{"$ref": "#/$defs/point"}]},
    "any": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
    "free": {"anyOf": [{"type": "integer"}, {}]},
    "tuple": {"prefixItems": [{"type": "integer"}, {"type": "boolean"}]}
  },
  "patternProperties": {"^x-": {"type": "integer"}},
  "additionalProperties": {"type": "boolean"}
}`

func TestCoerce(t *testing.T) {
	s := mustCompile(t, coerceSchema)
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"integer", `{"n":"42"}`, `{"n":42}`},
		{"integer spaces", `{"n":" 42\n"}`, `{"n":42}`},
		{"negative exponent number", `{"f":"-1.5e3"}`, `{"f":-1.5e3}`},
		{"big integer keeps digits", `{"n":"123456789012345678901234567890"}`, `{"n":123456789012345678901234567890}`},
		{"not a number stays", `{"n":"forty"}`, `{"n":"forty"}`},
		{"hex is not a number", `{"n":"0x10"}`, `{"n":"0x10"}`},
		{"plus sign is not JSON", `{"n":"+5"}`, `{"n":"+5"}`},
		{"NaN stays", `{"f":"NaN"}`, `{"f":"NaN"}`},
		{"empty stays", `{"n":""}`, `{"n":""}`},
		{"boolean true", `{"b":"true"}`, `{"b":true}`},
		{"boolean False", `{"b":"False"}`, `{"b":false}`},
		{"boolean yes stays", `{"b":"yes"}`, `{"b":"yes"}`},
		{"string stays string", `{"s":"42"}`, `{"s":"42"}`},
		{"union with string keeps string", `{"sn":"42"}`, `{"sn":"42"}`},
		{"null allowed", `{"nb":"null"}`, `{"nb":null}`},
		{"number already", `{"n":42}`, `{"n":42}`},
		{"object from JSON text", `{"obj":"{\"k\":\"7\"}"}`, `{"obj":{"k":7}}`},
		{"invalid object text stays", `{"obj":"{\"k\":"}`, `{"obj":"{\"k\":"}`},
		{"array from JSON text", `{"arr":"[1,\"2\"]"}`, `{"arr":[1,2]}`},
		{"single value to array", `{"arr":"5"}`, `{"arr":[5]}`},
		{"single number to array", `{"arr":5}`, `{"arr":[5]}`},
		{"single string to array", `{"strs":"hello"}`, `{"strs":["hello"]}`},
		{"items coerced", `{"arr":["1","2"]}`, `{"arr":[1,2]}`},
		{"nested arrays", `{"grid":"7"}`, `{"grid":[[7]]}`},
		{"null not wrapped", `{"arr":null}`, `{"arr":null}`},
		{"through $ref", `{"ref":{"x":"1","y":"2.5"}}`, `{"ref":{"x":1,"y":2.5}}`},
		{"through allOf", `{"all":{"x":"3"}}`, `{"all":{"x":3}}`},
		{"anyOf union", `{"any":"true"}`, `{"any":true}`},
		{"anyOf union number", `{"any":"12"}`, `{"any":12}`},
		{"anyOf with an unconstrained branch", `{"free":"12"}`, `{"free":"12"}`},
		{"prefixItems", `{"tuple":["1","true"]}`, `{"tuple":[1,true]}`},
		{"patternProperties", `{"x-count":"3"}`, `{"x-count":3}`},
		{"additionalProperties", `{"other":"true"}`, `{"other":true}`},
		{"top-level JSON text", `"{\"n\":\"1\"}"`, `{"n":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := decode(t, tc.in)
			got := s.Coerce(in)
			want := decode(t, tc.want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Coerce(%s) = %#v, want %#v", tc.in, got, want)
			}
			if again := s.Coerce(got); !reflect.DeepEqual(again, got) {
				t.Errorf("not idempotent: %#v then %#v", got, again)
			}
			if !reflect.DeepEqual(in, decode(t, tc.in)) {
				t.Errorf("input modified: %#v", in)
			}
		})
	}
}

func TestCoerce_thenValidate(t *testing.T) {
	s := mustCompile(t, playerSchema)
	args := map[string]any{"player_id": "17", "include_stats": "true", "tags": "rookie"}
	got := s.Coerce(args)
	if err := s.Validate(got); err != nil {
		t.Fatalf("coerced arguments invalid: %v", err)
	}
	b, err := schema.Canonical(got)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"include_stats":true,"player_id":17,"tags":["rookie"]}` {
		t.Errorf("canonical = %s", b)
	}
	if args["player_id"] != "17" {
		t.Error("Coerce modified its input")
	}
}

func TestCoerce_recursiveRef(t *testing.T) {
	for _, raw := range []string{`{"$ref":"#"}`, `{"allOf":[{"$ref":"#"}]}`, `{"anyOf":[{"$ref":"#"}]}`, `{"properties":{"a":{"$ref":"#"}},"type":"object"}`} {
		s := mustCompile(t, raw)
		v := decode(t, `{"a":{"a":{"a":"1"}}}`)
		_ = s.Coerce(v) // must terminate without panicking
	}
}

func TestCoerce_depthBound(t *testing.T) {
	s := mustCompile(t, `{"type":"array","items":{"$ref":"#"}}`)
	var v any = "x"
	for range 2000 {
		v = []any{v}
	}
	out := s.Coerce(v)
	if !reflect.DeepEqual(s.Coerce(out), out) {
		t.Error("deep value: not idempotent")
	}
}

func TestCanonical(t *testing.T) {
	type point struct {
		Y int `json:"y"`
		X int `json:"x"`
	}
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"sorted map", map[string]any{"b": 1.0, "a": []any{"<&>", nil, true}}, `{"a":["<&>",null,true],"b":1}`},
		{"json number digits", map[string]any{"n": json.Number("123456789012345678901234567890")}, `{"n":123456789012345678901234567890}`},
		{"raw message sorted", json.RawMessage(`{ "z": 1, "a": {"d": 2, "c": 3} }`), `{"a":{"c":3,"d":2},"z":1}`},
		{"struct sorted", point{Y: 1, X: 2}, `{"x":2,"y":1}`},
		{"string", "é\u2028", `"é\u2028"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := schema.Canonical(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got %s, want %s", b, tc.want)
			}
		})
	}
	if _, err := schema.Canonical(map[string]any{"f": func() {}}); err == nil {
		t.Error("a func value encoded without error")
	}
	if _, err := schema.Canonical(json.Number("1x")); err == nil {
		t.Error("an invalid json.Number encoded without error")
	}
}

func TestSuggest(t *testing.T) {
	ids := []string{"core:echo", "text:word-count", "text:stats", "fs:read", "fs:write", "fs:list", "json:query"}
	tests := []struct {
		name  string
		in    string
		cands []string
		max   int
		want  []string
	}{
		{"camel vs snake", "playerId", []string{"player_id", "season", "team"}, 3, []string{"player_id"}},
		{"typo", "seasn", []string{"player_id", "season", "team"}, 3, []string{"season"}},
		{"transposition", "saeson", []string{"season"}, 3, []string{"season"}},
		{"case", "SEASON", []string{"season"}, 3, []string{"season"}},
		{"dash and dot", "player.id", []string{"player-id"}, 3, []string{"player-id"}},
		{"nothing close", "zzzzzzzz", []string{"season"}, 3, nil},
		{"empty", "", []string{"season"}, 3, nil},
		{"tool typo", "core:ecoh", ids, 3, []string{"core:echo"}},
		{"tool without namespace", "echo", ids, 3, []string{"core:echo"}},
		{"wrong namespace", "text:wordcount", ids, 3, []string{"text:word-count"}},
		{"fs family ordered", "fs:reed", ids, 2, []string{"fs:read"}},
		{"limit", "fs:lis", []string{"fs:list", "fs:lst", "fs:lis1"}, 2, []string{"fs:lis1", "fs:list"}},
		{"no limit", "ab", []string{"ac", "ad", "ae"}, 0, []string{"ac", "ad", "ae"}},
		{"duplicates once", "ab", []string{"ac", "ac"}, 0, []string{"ac"}},
		{"short names strict", "id", []string{"name"}, 3, nil},
		{"unicode", "名字", []string{"名称", "名字x"}, 3, []string{"名字x", "名称"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := schema.Suggest(tc.in, tc.cands, tc.max)
			if !reflect.DeepEqual(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("Suggest(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
