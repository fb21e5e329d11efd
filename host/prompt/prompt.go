// Package prompt renders the system-prompt block: the
// tool catalogue (IDs usable as tags, descriptions, typed parameters with
// required/optional, enums and defaults, one example call per tool) and the
// ACTION protocol instructions with few-shot examples, ready to paste into
// a system prompt.
package prompt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/agenthost/agenthost/host/action"
	"github.com/agenthost/agenthost/host/manifest"
)

// Options tune the rendering. The zero value is the full form.
type Options struct {
	// Compact keeps the token count low: one line per tool with its
	// signature, the first sentence of its description, and a short
	// protocol section without per-tool examples.
	Compact bool
}

// Render returns the system-prompt block for tools.
func Render(tools []*manifest.Tool, opts Options) string {
	var b strings.Builder
	if opts.Compact {
		b.WriteString("# Tools\nCall a tool by writing one <ACTION> block; put each call inside it as <tool-id><param>value</param></tool-id>. Parameters marked ? are optional.\n\n")
		for _, t := range tools {
			fmt.Fprintf(&b, "- %s(%s): %s\n", t.ToolID, signature(params(t)), firstSentence(t.Description))
		}
		b.WriteString("\n")
		b.WriteString(compactProtocol)
		return b.String()
	}
	b.WriteString("# Tools\n\nYou can call the tools below. Each tool ID is also the XML tag you use to call it.\n\n")
	for _, t := range tools {
		writeTool(&b, t)
	}
	b.WriteString(protocol)
	return b.String()
}

func writeTool(b *strings.Builder, t *manifest.Tool) {
	fmt.Fprintf(b, "## %s — %s\n%s\n", t.ToolID, t.DisplayName, strings.TrimSpace(t.Description))
	ps := params(t)
	if len(ps) == 0 {
		b.WriteString("Parameters: none.\n")
	} else {
		b.WriteString("Parameters:\n")
		for _, p := range ps {
			fmt.Fprintf(b, "- %s (%s", p.name, p.typ)
			if p.required {
				b.WriteString(", required")
			} else {
				b.WriteString(", optional")
			}
			if len(p.enum) > 0 {
				fmt.Fprintf(b, ", one of: %s", strings.Join(p.enum, ", "))
			}
			if p.def != "" {
				fmt.Fprintf(b, ", default %s", p.def)
			}
			b.WriteString(")")
			if p.desc != "" {
				b.WriteString(": " + p.desc)
			}
			b.WriteString("\n")
		}
	}
	if len(t.Examples) > 0 {
		if call, ok := exampleCall(t, t.Examples[0]); ok {
			if d := strings.TrimSpace(t.Examples[0].Description); d != "" {
				fmt.Fprintf(b, "Example (%s):\n", strings.TrimSuffix(d, "."))
			} else {
				b.WriteString("Example:\n")
			}
			b.WriteString(action.Render([]action.Call{call}))
			b.WriteString("\n")
		}
	}
	b.WriteString("\n")
}

// param is one top-level parameter as the model needs to see it.
type param struct {
	name, typ, desc, def string
	enum                 []string
	required             bool
}

// schemaDoc is the subset of JSON Schema the catalogue shows.
type schemaDoc struct {
	Type        json.RawMessage       `json:"type"`
	Description string                `json:"description"`
	Enum        []json.RawMessage     `json:"enum"`
	Const       json.RawMessage       `json:"const"`
	Default     json.RawMessage       `json:"default"`
	Items       *schemaDoc            `json:"items"`
	Properties  map[string]*schemaDoc `json:"properties"`
	Required    []string              `json:"required"`
}

func params(t *manifest.Tool) []param {
	if len(t.Parameters) == 0 {
		return nil
	}
	var s schemaDoc
	if json.Unmarshal(t.Parameters, &s) != nil {
		return nil
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	// Required parameters first, each group in name order.
	sort.Slice(names, func(i, j int) bool {
		if req[names[i]] != req[names[j]] {
			return req[names[i]]
		}
		return names[i] < names[j]
	})
	out := make([]param, 0, len(names))
	for _, n := range names {
		p := s.Properties[n]
		if p == nil {
			p = &schemaDoc{}
		}
		q := param{name: n, typ: typeName(p), desc: strings.TrimSpace(p.Description), required: req[n]}
		for _, e := range p.Enum {
			q.enum = append(q.enum, string(e))
		}
		if len(p.Default) > 0 {
			q.def = string(p.Default)
		}
		out = append(out, q)
	}
	return out
}

func typeName(s *schemaDoc) string {
	var name string
	if len(s.Type) > 0 {
		var one string
		var many []string
		if json.Unmarshal(s.Type, &one) == nil {
			name = one
		} else if json.Unmarshal(s.Type, &many) == nil {
			name = strings.Join(many, "|")
		}
	}
	switch {
	case name == "array" && s.Items != nil:
		return "list of " + typeName(s.Items) + " as <item> elements"
	case name == "object" && len(s.Properties) > 0:
		keys := make([]string, 0, len(s.Properties))
		for k := range s.Properties {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return "object with " + strings.Join(keys, ", ")
	case name == "" && len(s.Enum) > 0:
		return "enum"
	case name == "":
		return "any"
	}
	return name
}

func signature(ps []param) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		opt := ""
		if !p.required {
			opt = "?"
		}
		typ := p.typ
		if len(p.enum) > 0 {
			typ = strings.Join(p.enum, "|")
		}
		typ = strings.ReplaceAll(typ, " as <item> elements", "")
		parts[i] = p.name + opt + ": " + typ
	}
	return strings.Join(parts, ", ")
}

func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// exampleCall turns a manifest example input into an ACTION call whose
// leaves are strings, as the model writes them.
func exampleCall(t *manifest.Tool, ex manifest.Example) (action.Call, bool) {
	dec := json.NewDecoder(bytes.NewReader(ex.Input))
	dec.UseNumber()
	var v map[string]any
	if dec.Decode(&v) != nil {
		return action.Call{}, false
	}
	args, _ := leaves(v).(map[string]any)
	if args == nil {
		args = map[string]any{}
	}
	return action.Call{Tool: t.ToolID, Args: args}, true
}

// leaves converts JSON values to the ACTION value model: strings, lists
// and objects.
func leaves(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = leaves(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = leaves(e)
		}
		return l
	case string:
		return x
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}
