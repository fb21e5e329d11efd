package host

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/agenthost/agenthost/host/manifest"
)

// Languages of CodeAPI.
const (
	CodeAPITypeScript = "ts"
	CodeAPIStarlark   = "starlark"
)

// ToolDecl is one tool of a program's API.
type ToolDecl struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	// Declaration is the function a program calls, typed from the
	// tool's schemas, in the API's language.
	Declaration string `json:"declaration"`
}

// CodeAPI returns the tools a program may call as a typed API the model
// reads: TypeScript declarations (lang "ts") or Starlark stubs
// ("starlark"), one per tool with the first sentence of its
// description, sorted by ID. allowed narrows the tools as
// CodeScope.Allowed does (nil: every callable tool); code tools are left
// out, since a program cannot call them.
func (h *Host) CodeAPI(lang string, allowed func(id string) bool) ([]ToolDecl, error) {
	if lang != CodeAPITypeScript && lang != CodeAPIStarlark {
		return nil, fmt.Errorf("code API language %q: want %q or %q", lang, CodeAPITypeScript, CodeAPIStarlark)
	}
	var out []ToolDecl
	for _, t := range h.reg.Filter("", "") {
		if !h.callable(t) || !h.programCallable(t, allowed) {
			continue
		}
		out = append(out, ToolDecl{ID: t.ToolID, Description: firstSentence(t.Description), Declaration: declare(t, lang)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// SearchTools returns at most limit tools of CodeAPI(lang, allowed)
// whose ID or description holds words of query, best match first: the
// progressive disclosure of tools.search(query), so a prompt need not
// list every tool.
func (h *Host) SearchTools(query, lang string, allowed func(id string) bool, limit int) ([]ToolDecl, error) {
	all, err := h.CodeAPI(lang, allowed)
	if err != nil {
		return nil, err
	}
	words := strings.Fields(strings.ToLower(query))
	type scored struct {
		d     ToolDecl
		score int
	}
	var hits []scored
	for _, d := range all {
		text := strings.ToLower(d.ID + " " + d.Description)
		score := 0
		for _, w := range words {
			if strings.Contains(strings.ToLower(d.ID), w) {
				score += 2
			} else if strings.Contains(text, w) {
				score++
			}
		}
		if score > 0 || len(words) == 0 {
			hits = append(hits, scored{d, score})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	out := make([]ToolDecl, len(hits))
	for i, s := range hits {
		out[i] = s.d
	}
	return out, nil
}

// programCallable reports whether a program may call t: allowed by the
// caller's scope and not a code tool (the first-party ones live in the
// "code" namespace; any other answers PERMISSION_DENIED when called).
func (h *Host) programCallable(t *manifest.Tool, allowed func(id string) bool) bool {
	if strings.HasPrefix(t.ToolID, "code:") {
		return false
	}
	return allowed == nil || allowed(t.ToolID)
}

// firstSentence is the description up to its first ". ".
func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// declare renders t's function in lang.
func declare(t *manifest.Tool, lang string) string {
	ns, name, _ := strings.Cut(t.ToolID, ":")
	member := "tools." + ident(ns) + "." + ident(name)
	params := schemaOf(t.Parameters)
	if lang == CodeAPITypeScript {
		return fmt.Sprintf("/** %s */\n%s(args: %s): Promise<%s>;", firstSentence(t.Description), member, tsType(params, 0), tsType(schemaOf(t.Output), 0))
	}
	var args []string
	props, _ := params["properties"].(map[string]any)
	required := map[string]bool{}
	for _, r := range stringList(params["required"]) {
		required[r] = true
	}
	var optional []string
	for _, k := range sortedProps(props) {
		p, _ := props[k].(map[string]any)
		if required[k] {
			args = append(args, k+": "+pyType(p))
		} else {
			optional = append(optional, k+": "+pyType(p)+" = None")
		}
	}
	args = append(args, optional...) // required first, as Python wants
	return fmt.Sprintf("# %s\n%s(%s) -> %s", firstSentence(t.Description), member, strings.Join(args, ", "), pyType(schemaOf(t.Output)))
}

// ident writes a dash as an underscore, as programs do.
func ident(s string) string { return strings.ReplaceAll(s, "-", "_") }

func schemaOf(raw json.RawMessage) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

func stringList(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func sortedProps(props map[string]any) []string {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// tsType is a TypeScript type for a JSON Schema (nested objects to a
// few levels; anything it cannot say is unknown).
func tsType(s map[string]any, depth int) string {
	if s == nil {
		return "unknown"
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		parts := make([]string, len(enum))
		for i, e := range enum {
			b, _ := json.Marshal(e)
			parts[i] = string(b)
		}
		return strings.Join(parts, " | ")
	}
	switch typ, _ := s["type"].(string); typ {
	case "string":
		return "string"
	case "integer", "number":
		return "number"
	case "boolean":
		return "boolean"
	case "null":
		return "null"
	case "array":
		items, _ := s["items"].(map[string]any)
		return "Array<" + tsType(items, depth+1) + ">"
	case "object":
		props, _ := s["properties"].(map[string]any)
		if len(props) == 0 || depth > 2 {
			return "Record<string, unknown>"
		}
		required := map[string]bool{}
		for _, r := range stringList(s["required"]) {
			required[r] = true
		}
		var fields []string
		for _, k := range sortedProps(props) {
			p, _ := props[k].(map[string]any)
			opt := "?"
			if required[k] {
				opt = ""
			}
			fields = append(fields, fmt.Sprintf("%s%s: %s", k, opt, tsType(p, depth+1)))
		}
		return "{ " + strings.Join(fields, "; ") + " }"
	}
	return "unknown"
}

// pyType is a Python-style type name for a JSON Schema.
func pyType(s map[string]any) string {
	switch typ, _ := s["type"].(string); typ {
	case "string":
		return "str"
	case "integer":
		return "int"
	case "number":
		return "float"
	case "boolean":
		return "bool"
	case "array":
		return "list"
	case "object":
		return "dict"
	}
	return "any"
}
