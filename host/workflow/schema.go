package workflow

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// jsonTypes maps a port's dataFlowType to its JSON Schema type.
var jsonTypes = map[string]string{
	"STRING":  "string",
	"INTEGER": "integer",
	"FLOAT":   "number",
	"BOOLEAN": "boolean",
	"OBJECT":  "object",
	"ARRAY":   "array",
}

// comboOption is the match category whose suggestions are the only
// allowed values.
const comboOption = "ComboOption"

// schema is the JSON Schema of one port: its type, description, the
// suggestions of a ComboOption as enum, and config.default as default
// (which must fit the type and the enum).
func (p Port) schema() (map[string]any, error) {
	typ, ok := jsonTypes[p.DataFlowType]
	if !ok {
		names := make([]string, 0, len(jsonTypes))
		for k := range jsonTypes {
			names = append(names, k)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("dataFlowType %q: want one of %s", p.DataFlowType, strings.Join(names, ", "))
	}
	s := map[string]any{"type": typ}
	if p.Description != "" {
		s["description"] = p.Description
	}
	var enum []any
	if p.Config != nil {
		for i, sg := range p.Config.Suggestions {
			if !fits(typ, sg.Value) {
				return nil, fmt.Errorf("config.suggestions[%d]: %s is not a %s", i, short(sg.Value), typ)
			}
			enum = append(enum, sg.Value)
		}
	}
	if slices.Contains(p.MatchCategories, comboOption) {
		if len(enum) == 0 {
			return nil, fmt.Errorf("a ComboOption needs config.suggestions (its allowed values)")
		}
		s["enum"] = enum
	} else if len(enum) > 0 {
		s["examples"] = enum
	}
	if p.Config != nil && p.Config.Default != nil {
		d := p.Config.Default
		if !fits(typ, d) {
			return nil, fmt.Errorf("config.default %s is not a %s", short(d), typ)
		}
		if e, ok := s["enum"].([]any); ok && !slices.ContainsFunc(e, func(v any) bool { return same(v, d) }) {
			return nil, fmt.Errorf("config.default %s is not one of the suggestions", short(d))
		}
		s["default"] = d
	}
	return s, nil
}

// Parameters is the workflow tool's parameter schema: an object with one
// property per interface input; required inputs are required.
func (w *Workflow) Parameters() json.RawMessage {
	props := map[string]any{}
	var req []string
	for _, name := range sortedKeys(w.InterfaceInputs) {
		p := w.InterfaceInputs[name]
		props[name], _ = p.schema()
		if p.Required {
			req = append(req, name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(req) > 0 {
		s["required"] = req
	}
	b, _ := json.Marshal(s)
	return b
}

// Output is the workflow tool's output schema: the one interface output's
// schema, or an object of them all (every one required).
func (w *Workflow) Output() json.RawMessage {
	names := sortedKeys(w.InterfaceOutputs)
	var s map[string]any
	if len(names) == 1 {
		s, _ = w.InterfaceOutputs[names[0]].schema()
	} else {
		props := map[string]any{}
		for _, name := range names {
			props[name], _ = w.InterfaceOutputs[name].schema()
		}
		s = map[string]any{"type": "object", "properties": props, "required": names}
	}
	b, _ := json.Marshal(s)
	return b
}

// fits reports whether v (decoded with UseNumber) is a value of JSON type
// typ.
func fits(typ string, v any) bool {
	switch typ {
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := n.Int64()
		return err == nil
	}
	return false
}

func same(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}
