package wire

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Adapted is a tool's parameter schema rewritten into what the model
// providers accept. OpenAI and Anthropic refuse a whole request when one
// tool's schema is not `type: object` at the top or has a top-level
// oneOf / anyOf / allOf / enum / not, and Google's SDK refuses `type` next
// to `anyOf`; a manifest may use all of these to say "give a or b". The
// rewrite keeps every property, moves the constraints it cannot express
// into words (Note), and leaves validation to the host, which checks the
// arguments against the manifest's own schema.
type Adapted struct {
	// Schema is the rewritten schema: `type: object` at the top and no
	// top-level combinator, enum, const, not or conditional.
	Schema map[string]any
	// Note states in words what the rewrite removed ("" when nothing):
	// it is appended to the tool's description.
	Note string
	// Rewrites says what was changed, one sentence each; empty when the
	// schema was accepted as it is.
	Rewrites []string
}

// topLevelOnly are the keywords providers refuse at the top of a tool's
// parameters (besides the combinators): they are described, not sent.
var topLevelOnly = []string{"enum", "const", "not", "if", "then", "else", "dependentRequired", "dependentSchemas"}

// Adapt rewrites a parameter schema (the manifest's) into one every
// provider accepts. An absent or unreadable schema is an empty object.
// The input is not modified.
func Adapt(raw json.RawMessage) Adapted {
	s := cloneMap(schemaOf(raw))
	a := Adapted{Schema: s}
	var notes []string
	// A root that is only a reference to one of its definitions (some
	// generators write one) is that definition.
	if ref, ok := s["$ref"].(string); ok {
		for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
			defs, _ := s[strings.Trim(prefix[1:], "/")].(map[string]any)
			if def, ok := defs[strings.TrimPrefix(ref, prefix)].(map[string]any); ok && strings.HasPrefix(ref, prefix) {
				delete(s, "$ref")
				for k, v := range def {
					if _, taken := s[k]; !taken {
						s[k] = v
					}
				}
				a.Rewrites = append(a.Rewrites, "top-level $ref "+ref+" resolved")
				break
			}
		}
	}
	switch t := s["type"].(type) {
	case string:
		if t != "object" {
			a.Rewrites = append(a.Rewrites, fmt.Sprintf("top-level type %q replaced by object", t))
			s["type"] = "object"
		}
	case nil:
		a.Rewrites = append(a.Rewrites, "top-level type: object added")
		s["type"] = "object"
	default:
		a.Rewrites = append(a.Rewrites, fmt.Sprintf("top-level type %s replaced by object", compact(t)))
		s["type"] = "object"
	}
	props, _ := s["properties"].(map[string]any)
	props = cloneMap(props)
	required := stringList(s["required"])
	if all, ok := s["allOf"].([]any); ok {
		delete(s, "allOf")
		for _, sub := range all {
			m, _ := sub.(map[string]any)
			mergeProps(props, m)
			required = union(required, stringList(m["required"]))
			if rest := others(m); rest != "" {
				notes = append(notes, "The arguments must also match "+rest+".")
			}
		}
		a.Rewrites = append(a.Rewrites, fmt.Sprintf("top-level allOf (%d schemas) merged into one object", len(all)))
	}
	for _, kw := range []string{"oneOf", "anyOf"} {
		alts, ok := s[kw].([]any)
		if !ok {
			if _, present := s[kw]; present {
				delete(s, kw)
				a.Rewrites = append(a.Rewrites, "malformed top-level "+kw+" dropped")
			}
			continue
		}
		delete(s, kw)
		var common []string
		var words []string
		for i, sub := range alts {
			m, _ := sub.(map[string]any)
			mergeProps(props, m)
			req := stringList(m["required"])
			if i == 0 {
				common = req
			} else {
				common = intersect(common, req)
			}
			words = append(words, alternative(m))
		}
		required = union(required, common)
		lead := "Give exactly one of: "
		if kw == "anyOf" {
			lead = "Give at least one of: "
		}
		notes = append(notes, lead+strings.Join(words, "; ")+".")
		a.Rewrites = append(a.Rewrites, fmt.Sprintf("top-level %s (%d alternatives) merged into one object, the alternatives described in the description", kw, len(alts)))
	}
	for _, kw := range topLevelOnly {
		v, ok := s[kw]
		if !ok {
			continue
		}
		delete(s, kw)
		notes = append(notes, fmt.Sprintf("The arguments must satisfy %s: %s.", kw, compact(v)))
		a.Rewrites = append(a.Rewrites, "top-level "+kw+" moved into the description")
	}
	if len(props) > 0 || s["properties"] != nil {
		s["properties"] = props
	}
	if len(required) > 0 {
		req := make([]any, len(required))
		for i, r := range required {
			req[i] = r
		}
		s["required"] = req
	} else {
		delete(s, "required")
	}
	a.Note = strings.Join(notes, " ")
	return a
}

// Provider is the schema as sent to a model provider: Schema without
// $schema, which the providers neither need nor all accept.
func (a Adapted) Provider() map[string]any {
	if _, ok := a.Schema["$schema"]; !ok {
		return a.Schema
	}
	out := maps.Clone(a.Schema)
	delete(out, "$schema")
	return out
}

// Describe appends an Adapted's Note to a tool description.
func Describe(description, note string) string {
	switch {
	case note == "":
		return description
	case description == "":
		return note
	}
	return strings.TrimRight(description, " ") + " " + note
}

// alternative describes one alternative of a top-level oneOf / anyOf:
// its required properties ("a and b"), else its schema as JSON.
func alternative(m map[string]any) string {
	req := stringList(m["required"])
	rest := maps.Clone(m)
	delete(rest, "required")
	delete(rest, "properties")
	if rest["type"] == "object" {
		delete(rest, "type")
	}
	if len(req) > 0 && len(rest) == 0 {
		return strings.Join(req, " and ")
	}
	return compact(m)
}

// others is the JSON of an allOf member's keywords besides its
// properties and required ones, "" when it has none.
func others(m map[string]any) string {
	rest := maps.Clone(m)
	delete(rest, "required")
	delete(rest, "properties")
	if rest["type"] == "object" {
		delete(rest, "type")
	}
	if len(rest) == 0 {
		return ""
	}
	return compact(rest)
}

// mergeProps adds the properties of m that props does not have yet.
func mergeProps(props, m map[string]any) {
	p, _ := m["properties"].(map[string]any)
	for k, v := range p {
		if _, ok := props[k]; !ok {
			props[k] = v
		}
	}
}

func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return maps.Clone(m)
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
