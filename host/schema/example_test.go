package schema_test

import (
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/host/schema"
)

func ExampleCompile() {
	s, err := schema.Compile(json.RawMessage(`{"$ref": "https://example.com/s.json"}`), "mem://tools/x:y/parameters")
	fmt.Println(s == nil, err)
	// Output: true compile schema mem://tools/x:y/parameters: remote $ref loading is disabled: https://example.com/s.json (register it as a mem:// resource)
}

func ExampleSchema_Validate() {
	s, _ := schema.Compile(json.RawMessage(`{
		"type": "object", "additionalProperties": false, "required": ["player_id"],
		"properties": {"player_id": {"type": "integer"}, "season": {"enum": ["2023", "2024"]}}
	}`), "mem://tools/game:player/parameters")
	err := s.Validate(map[string]any{"playerId": 7.0, "season": "1999"})
	fmt.Println(err.Code)
	for _, fe := range err.Details.(schema.Details).Errors {
		fmt.Printf("%s: %s\n", fe.Pointer, fe.Message)
	}
	// Output:
	// INVALID_ARGUMENTS
	// /playerId: unknown parameter 'playerId', did you mean 'player_id'?
	// /player_id: missing required parameter 'player_id'
	// /season: parameter 'season' must be one of "2023", "2024", got "1999"
}

func ExampleSchema_Coerce() {
	s, _ := schema.Compile(json.RawMessage(`{
		"type": "object",
		"properties": {
			"limit": {"type": "integer"}, "verbose": {"type": "boolean"},
			"names": {"type": "array", "items": {"type": "string"}},
			"filter": {"type": "object", "properties": {"min": {"type": "number"}}}
		}
	}`), "mem://tools/x:list/parameters")
	// every leaf of an ACTION block is a string
	args := map[string]any{"limit": "10", "verbose": "true", "names": "Alice", "filter": `{"min": "0.5"}`}
	b, _ := schema.Canonical(s.Coerce(args))
	fmt.Println(string(b))
	// Output: {"filter":{"min":0.5},"limit":10,"names":["Alice"],"verbose":true}
}

func ExampleSuggest() {
	ids := []string{"core:echo", "text:stats", "text:word-count", "fs:read"}
	fmt.Println(schema.Suggest("text:wordcount", ids, 3))
	fmt.Println(schema.Suggest("echo", ids, 3))
	fmt.Println(schema.Suggest("playerId", []string{"player_id", "season"}, 3))
	// Output:
	// [text:word-count]
	// [core:echo]
	// [player_id]
}

func ExampleCanonical() {
	b, _ := schema.Canonical(map[string]any{"b": []any{1.0, "<x>"}, "a": json.Number("12345678901234567890")})
	fmt.Println(string(b))
	// Output: {"a":12345678901234567890,"b":[1,"<x>"]}
}

func ExampleCompiler_AddResource() {
	c := schema.NewCompiler()
	_ = c.AddResource("mem://common/player-id", json.RawMessage(`{"type": "integer", "minimum": 1}`))
	s, err := c.Compile(json.RawMessage(`{
		"type": "object",
		"properties": {"player_id": {"$ref": "mem://common/player-id"}}
	}`), "mem://tools/game:player/parameters")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Validate(map[string]any{"player_id": 0.0}))
	// Output: INVALID_ARGUMENTS: parameter 'player_id' must be >= 1, got 0
}
