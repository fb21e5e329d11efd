package schema_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/schema"
)

const playerSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["player_id"],
  "properties": {
    "player_id": {"type": "integer", "minimum": 1},
    "season": {"type": "string", "enum": ["2023", "2024"]},
    "include_stats": {"type": "boolean"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "filter": {
      "type": "object",
      "additionalProperties": false,
      "properties": {"team_name": {"type": "string"}, "min_games": {"type": "integer"}}
    }
  }
}`

func mustCompile(t testing.TB, raw string) *schema.Schema {
	t.Helper()
	s, err := schema.Compile(json.RawMessage(raw), "mem://test/schema.json")
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return s
}

func decode(t testing.TB, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func TestCompile(t *testing.T) {
	c := schema.NewCompiler()
	if err := c.AddResource("mem://common/id", json.RawMessage(`{"type":"integer","minimum":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("mem://common/id", json.RawMessage(`{}`)); err == nil {
		t.Error("registering the same URL twice succeeded")
	}
	if err := c.AddResource("https://example.com/x.json", json.RawMessage(`{}`)); err == nil {
		t.Error("registering a https URL succeeded")
	}
	tests := []struct {
		name    string
		raw     string
		url     string
		wantErr string
		remote  bool
	}{
		{name: "object", raw: playerSchema, url: "mem://t/a"},
		{name: "boolean schema", raw: `true`, url: "mem://t/b"},
		{name: "registered ref", raw: `{"properties":{"id":{"$ref":"mem://common/id"}}}`, url: "mem://t/c"},
		{name: "recursive ref", raw: `{"type":"object","properties":{"child":{"$ref":"#"}}}`, url: "mem://t/d"},
		{name: "self ref only", raw: `{"$ref":"#"}`, url: "mem://t/e"},
		{name: "draft-04", raw: `{"$schema":"http://json-schema.org/draft-04/schema#","type":"integer","maximum":5,"exclusiveMaximum":true}`, url: "mem://t/f"},
		{name: "draft-07", raw: `{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}`, url: "mem://t/g"},
		{name: "remote ref", raw: `{"$ref":"https://example.com/schema.json"}`, url: "mem://t/h", wantErr: "remote $ref", remote: true},
		{name: "remote ref via $id", raw: `{"$id":"https://example.com/a.json","properties":{"x":{"$ref":"b.json"}}}`, url: "mem://t/i", wantErr: "remote $ref", remote: true},
		{name: "file ref", raw: `{"$ref":"file:///etc/passwd"}`, url: "mem://t/j", wantErr: "remote $ref", remote: true},
		{name: "unknown metaschema", raw: `{"$schema":"https://example.com/meta"}`, url: "mem://t/k", wantErr: "remote $ref", remote: true},
		{name: "invalid json", raw: `{"type":`, url: "mem://t/l", wantErr: "invalid JSON"},
		{name: "trailing data", raw: `{} {}`, url: "mem://t/m", wantErr: "after the top-level value"},
		{name: "invalid schema", raw: `{"type":"strin"}`, url: "mem://t/n", wantErr: "compile schema"},
		{name: "bad pattern", raw: `{"pattern":"("}`, url: "mem://t/o", wantErr: "compile schema"},
		{name: "not mem url", raw: `{}`, url: "https://example.com/p", wantErr: "mem://"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := c.Compile(json.RawMessage(tc.raw), tc.url)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if s.URL() != tc.url {
					t.Errorf("URL() = %q", s.URL())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want containing %q", err, tc.wantErr)
			}
			if tc.remote && !errors.Is(err, schema.ErrRemoteRef) {
				t.Errorf("error %v is not ErrRemoteRef", err)
			}
		})
	}
}

func TestValidate_recursive(t *testing.T) {
	s := mustCompile(t, `{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}},"$ref":"#/$defs/node"}`)
	if err := s.Validate(decode(t, `{"v":1,"kids":[{"v":2,"kids":[{"v":3}]}]}`)); err != nil {
		t.Fatalf("valid tree rejected: %v", err)
	}
	err := s.Validate(decode(t, `{"v":1,"kids":[{"v":2,"kids":[{"v":"x"}]}]}`))
	if err == nil || err.Details.(schema.Details).Errors[0].Pointer != "/kids/0/kids/0/v" {
		t.Fatalf("deep error = %#v", err)
	}
	self := mustCompile(t, `{"$ref":"#"}`)
	if err := self.Validate(decode(t, `{"a":1}`)); err == nil {
		t.Log("self-referencing schema: reported as a cycle error") // either way, no crash
	}
}

func TestValidate(t *testing.T) {
	s := mustCompile(t, playerSchema)
	tests := []struct {
		name     string
		value    string
		wantMsg  string
		pointers []string
		suggest  []string
	}{
		{name: "valid", value: `{"player_id": 7, "season": "2024", "tags": ["a"], "filter": {"team_name": "x"}}`},
		{name: "valid float integer", value: `{"player_id": 7.0}`},
		{
			name: "misspelt parameter", value: `{"player_id": 1, "playerId": 7}`,
			wantMsg:  "unknown parameter 'playerId', did you mean 'player_id'?",
			pointers: []string{"/playerId"}, suggest: []string{"player_id"},
		},
		{
			name: "unknown parameter without a close name", value: `{"player_id": 1, "zzzzzzzz": 7}`,
			wantMsg:  "unknown parameter 'zzzzzzzz' (allowed: 'filter', 'include_stats', 'player_id', 'season', 'tags')",
			pointers: []string{"/zzzzzzzz"},
		},
		{
			name: "missing required", value: `{}`,
			wantMsg: "missing required parameter 'player_id'", pointers: []string{"/player_id"},
		},
		{
			name: "wrong type", value: `{"player_id": "seven"}`,
			wantMsg: "parameter 'player_id' must be an integer, got a string", pointers: []string{"/player_id"},
		},
		{
			name: "not an integer", value: `{"player_id": 1.5}`,
			wantMsg: "parameter 'player_id' must be an integer, got a number", pointers: []string{"/player_id"},
		},
		{
			name: "enum", value: `{"player_id": 1, "season": "1999"}`,
			wantMsg: `parameter 'season' must be one of "2023", "2024", got "1999"`, pointers: []string{"/season"},
		},
		{
			name: "minimum", value: `{"player_id": 0}`,
			wantMsg: "parameter 'player_id' must be >= 1, got 0", pointers: []string{"/player_id"},
		},
		{
			name: "nested unknown", value: `{"player_id": 1, "filter": {"teamName": "x"}}`,
			wantMsg:  "unknown property 'teamName', did you mean 'team_name'?",
			pointers: []string{"/filter/teamName"}, suggest: []string{"team_name"},
		},
		{
			name: "array item", value: `{"player_id": 1, "tags": ["a", 2]}`,
			wantMsg: "parameter 'tags/1' must be a string, got a number", pointers: []string{"/tags/1"},
		},
		{
			name: "several errors", value: `{"playerId": 1, "season": 2024}`,
			wantMsg:  "unknown parameter 'playerId', did you mean 'player_id'?; missing required parameter 'player_id'; parameter 'season' must be a string, got a number",
			pointers: []string{"/playerId", "/player_id", "/season"},
		},
		{
			name: "not an object", value: `[1]`,
			wantMsg: "the value must be an object, got an array", pointers: []string{""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Validate(decode(t, tc.value))
			if tc.wantMsg == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, abi.ErrInvalidArguments) {
				t.Errorf("code = %s", err.Code)
			}
			if err.Message != tc.wantMsg {
				t.Errorf("message:\n got %s\nwant %s", err.Message, tc.wantMsg)
			}
			d, ok := err.Details.(schema.Details)
			if !ok {
				t.Fatalf("details = %T", err.Details)
			}
			var ptrs []string
			for _, fe := range d.Errors {
				ptrs = append(ptrs, fe.Pointer)
			}
			want := append([]string(nil), tc.pointers...)
			sortStrings(want)
			if !reflect.DeepEqual(ptrs, want) {
				t.Errorf("pointers = %q, want %q", ptrs, want)
			}
			if tc.suggest != nil && !reflect.DeepEqual(d.Errors[0].Suggestions, tc.suggest) {
				t.Errorf("suggestions = %q, want %q", d.Errors[0].Suggestions, tc.suggest)
			}
		})
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func TestValidate_drafts(t *testing.T) {
	tests := []struct {
		name  string
		raw   string
		value string
		valid bool
	}{
		{"draft-04 exclusiveMaximum true", `{"$schema":"http://json-schema.org/draft-04/schema#","maximum":5,"exclusiveMaximum":true}`, `5`, false},
		{"draft-04 below", `{"$schema":"http://json-schema.org/draft-04/schema#","maximum":5,"exclusiveMaximum":true}`, `4`, true},
		{"draft-07 tuple items", `{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}],"additionalItems":false}`, `["a",1]`, false},
		{"draft-07 $ref ignores siblings", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"s":{"type":"string"}},"$ref":"#/definitions/s","maxLength":1}`, `"abc"`, true},
		{"2020-12 $ref with siblings", `{"$defs":{"s":{"type":"string"}},"$ref":"#/$defs/s","maxLength":1}`, `"abc"`, false},
		{"2020-12 prefixItems", `{"prefixItems":[{"type":"string"}],"items":false}`, `["a",1]`, false},
		{"draft-07 format asserted", `{"$schema":"http://json-schema.org/draft-07/schema#","format":"ipv4"}`, `"999.1.1.1"`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustCompile(t, tc.raw)
			err := s.Validate(decode(t, tc.value))
			if (err == nil) != tc.valid {
				t.Fatalf("valid = %v, want %v (err %v)", err == nil, tc.valid, err)
			}
		})
	}
}

func TestValidate_propertyNames(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"a":{"type":"object","propertyNames":{"pattern":"^[a-z]+$"}}}}`)
	err := s.Validate(decode(t, `{"a":{"ok":1,"Bad":2}}`))
	if err == nil || err.Message != "invalid property name 'Bad'" {
		t.Fatalf("error = %v", err)
	}
}

func TestValidate_constraintMessages(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{
		"max":{"maximum":5},"xmin":{"exclusiveMinimum":0},"xmax":{"exclusiveMaximum":1.5},
		"short":{"minLength":3},"long":{"maxLength":2},"few":{"minItems":2},"many":{"maxItems":1},
		"pat":{"pattern":"^[a-z]+$"},"one":{"const":"x"}}}`)
	tests := []struct{ value, want string }{
		{`{"max":6}`, "parameter 'max' must be <= 5, got 6"},
		{`{"xmin":0}`, "parameter 'xmin' must be > 0, got 0"},
		{`{"xmax":1.5}`, "parameter 'xmax' must be < 1.5, got 1.5"},
		{`{"short":"ab"}`, "parameter 'short' must be at least 3 characters long, got 2"},
		{`{"long":"abc"}`, "parameter 'long' must be at most 2 characters long, got 3"},
		{`{"few":[1]}`, "parameter 'few' must have at least 2 items, got 1"},
		{`{"many":[1,2]}`, "parameter 'many' must have at most 1 items, got 2"},
		{`{"pat":"A1"}`, `parameter 'pat' must match the pattern ^[a-z]+$, got "A1"`},
		{`{"one":"y"}`, `parameter 'one' must be "x", got "y"`},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			err := s.Validate(decode(t, tc.value))
			if err == nil || err.Message != tc.want {
				t.Errorf("got %v, want %s", err, tc.want)
			}
		})
	}
}

func TestValidate_alternatives(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{
		"id":{"anyOf":[{"type":"integer"},{"type":"string","pattern":"^u-"}]},
		"v":{"oneOf":[{"type":"number"},{"type":"integer"}]}}}`)
	tests := []struct{ value, want string }{
		{`{"id":"x"}`, `parameter 'id' matches none of the allowed forms: parameter 'id' must be an integer, got a string | parameter 'id' must match the pattern ^u-, got "x"`},
		{`{"v":1}`, "parameter 'v' matches more than one of the allowed forms (1 and 2); it must match exactly one"},
	}
	for _, tc := range tests {
		err := s.Validate(decode(t, tc.value))
		if err == nil || err.Message != tc.want {
			t.Errorf("%s: got %v\nwant %s", tc.value, err, tc.want)
		}
	}
}

func TestAnyObject(t *testing.T) {
	tests := []struct {
		schema string
		want   bool
	}{
		{`{"type":"object"}`, true},
		{`{"type":"object","additionalProperties":true,"description":"anything"}`, true},
		{`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","title":"t"}`, true},
		{`{}`, false},                                      // any value, not only objects
		{`{"type":["object","null"]}`, false},              // null too
		{`{"type":"object","required":["a"]}`, false},      // a constraint
		{`{"type":"object","properties":{"a":{}}}`, false}, // properties: conservative
		{`{"type":"object","additionalProperties":false}`, false},
		{`{"type":"object","minProperties":1}`, false},
		{`{"type":"object","maxProperties":3}`, false},
		{`{"type":"object","allOf":[{"required":["a"]}]}`, false},
		{`{"type":"object","not":{"required":["a"]}}`, false}, // outside the fast path
		{`{"type":"array"}`, false},
	}
	for _, tc := range tests {
		s := mustCompile(t, tc.schema)
		if got := s.AnyObject(); got != tc.want {
			t.Errorf("%s: AnyObject() = %v, want %v", tc.schema, got, tc.want)
		}
		if tc.want && (s.Validate(map[string]any{"x": 1.0}) != nil || s.Validate([]any{}) == nil) {
			t.Errorf("%s: not exactly the objects", tc.schema)
		}
	}
}
