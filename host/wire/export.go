package wire

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Def is what a tool definition for a model provider or MCP needs.
type Def struct {
	ID          string
	Title       string
	Description string
	// Parameters and Output are JSON Schemas (Output may be empty).
	Parameters json.RawMessage
	Output     json.RawMessage
}

// Formats lists the formats Export writes.
var Formats = []string{"openai", "anthropic", "mcp", "gemini"}

// Export renders defs as the tool definitions of format:
//
//	openai     [{"type":"function","function":{"name","description","parameters","strict"?}}]
//	anthropic  [{"name","description","input_schema"}]
//	mcp        [{"name","title","description","inputSchema","outputSchema"?}]
//	gemini     {"functionDeclarations":[{"name","description","parametersJsonSchema"}]}
//
// Names are wire names (see Table). Every parameter schema is rewritten
// by Adapt into what the providers accept (MCP clients hand the schemas
// on to them), the rewrite's note appended to the description. OpenAI's
// strict is set only when the schema fits its strict subset (see
// Strict). Gemini gets the full JSON Schema as parametersJsonSchema, not
// its OpenAPI-style parameters. MCP's outputSchema is given only for an
// object output.
func Export(format string, defs []Def) (any, error) {
	if !slices.Contains(Formats, format) {
		return nil, fmt.Errorf("unknown format %q: want openai, anthropic, mcp or gemini", format)
	}
	ids := make([]string, len(defs))
	for i, d := range defs {
		ids[i] = d.ID
	}
	tab, err := NewTable(ids)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(defs))
	for _, d := range defs {
		name, _ := tab.Name(d.ID)
		a := Adapt(d.Parameters)
		desc := Describe(d.Description, a.Note)
		switch format {
		case "openai":
			params := a.Provider()
			fn := map[string]any{"name": name, "description": desc, "parameters": params}
			if Strict(params) {
				fn["strict"] = true
			}
			out = append(out, map[string]any{"type": "function", "function": fn})
		case "anthropic":
			out = append(out, map[string]any{"name": name, "description": desc, "input_schema": a.Provider()})
		case "mcp":
			m := map[string]any{"name": name, "title": d.Title, "description": desc, "inputSchema": a.Schema}
			if o := schemaOf(d.Output); len(d.Output) > 0 && o["type"] == "object" {
				m["outputSchema"] = o
			}
			out = append(out, m)
		case "gemini":
			out = append(out, map[string]any{"name": name, "description": desc, "parametersJsonSchema": a.Provider()})
		}
	}
	if format == "gemini" {
		return map[string]any{"functionDeclarations": out}, nil
	}
	return out, nil
}

func schemaOf(raw json.RawMessage) map[string]any {
	var m map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil || m == nil {
		return map[string]any{"type": "object"}
	}
	return m
}

// strictKeys are the schema keywords OpenAI's strict mode accepts.
var strictKeys = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true, "items": true,
	"enum": true, "const": true, "description": true, "title": true, "anyOf": true, "$ref": true, "$defs": true,
	"pattern": true, "format": true, "minimum": true, "maximum": true, "exclusiveMinimum": true,
	"exclusiveMaximum": true, "multipleOf": true, "minItems": true, "maxItems": true, "$schema": true,
}

// Strict reports whether a JSON Schema fits OpenAI's strict subset: only
// the keywords it knows, and every object closed (additionalProperties
// false) with every property required.
func Strict(s map[string]any) bool {
	for k, v := range s {
		if !strictKeys[k] {
			return false
		}
		switch k {
		case "properties", "$defs":
			m, ok := v.(map[string]any)
			if !ok {
				return false
			}
			for _, sub := range m {
				ss, ok := sub.(map[string]any)
				if !ok || !Strict(ss) {
					return false
				}
			}
		case "items":
			ss, ok := v.(map[string]any)
			if !ok || !Strict(ss) {
				return false
			}
		case "anyOf":
			list, ok := v.([]any)
			if !ok {
				return false
			}
			for _, sub := range list {
				ss, ok := sub.(map[string]any)
				if !ok || !Strict(ss) {
					return false
				}
			}
		}
	}
	if s["type"] == "object" {
		if s["additionalProperties"] != false {
			return false
		}
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		if len(req) != len(props) {
			return false
		}
		for _, r := range req {
			if _, ok := props[fmt.Sprint(r)]; !ok {
				return false
			}
		}
	}
	return true
}
