package workflow

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/host/manifest"
)

// Lookup finds a loaded tool by ID ("id" or "id@version").
type Lookup func(id string) (*manifest.Tool, bool)

// Check checks the workflow against a catalogue: every node's tool is
// loaded, its required arguments are given and no argument is one it does
// not take (when its schema closes the object), and where both schemas
// say, a value's type is the type of the argument or output it feeds.
func (w *Workflow) Check(lookup Lookup) error {
	for i, n := range w.Nodes {
		where := fmt.Sprintf("/nodes/%d", i)
		t, ok := lookup(n.Tool)
		if !ok {
			return errorf(where+"/tool", "node %q calls %s, which is not loaded", n.ID, n.Tool)
		}
		params := decodeSchema(t.Parameters)
		props, _ := params["properties"].(map[string]any)
		for _, r := range stringList(params["required"]) {
			if _, given := n.Args[r]; !given {
				return errorf(where+"/args", "node %q: %s requires the argument %q", n.ID, n.Tool, r)
			}
		}
		if ap, ok := params["additionalProperties"].(bool); ok && !ap {
			for _, a := range sortedKeys(n.Args) {
				if _, known := props[a]; !known {
					return errorf(where+"/args/"+escape(a), "node %q: %s takes no argument %q (it takes: %s)", n.ID, n.Tool, a, orNone(sortedKeys(props)))
				}
			}
		}
		for _, u := range w.refs[i] {
			arg, rest, _ := strings.Cut(strings.TrimPrefix(u.at, "/"), "/")
			if rest != "" || arg == "" {
				continue // inside an argument: its schema is not checked here
			}
			want := typeOf(props[arg])
			if want == "" {
				continue
			}
			if !u.whole {
				if want != "string" {
					return errorf(where+"/args/"+arg, "node %q: %s is interpolated into text, but %s's argument %q is a %s", n.ID, u.ref.text, n.Tool, arg, want)
				}
				continue
			}
			if got := w.refType(u.ref, lookup); got != "" && !assignable(got, want) {
				return errorf(where+"/args/"+arg, "node %q: %s is a %s, but %s's argument %q is a %s", n.ID, u.ref.text, got, n.Tool, arg, want)
			}
		}
	}
	for _, name := range sortedKeys(w.outRefs) {
		want := jsonTypes[w.InterfaceOutputs[name].DataFlowType]
		if got := w.refType(w.outRefs[name], lookup); got != "" && !assignable(got, want) {
			return errorf("/outputs/"+name, "%s is a %s, but the interface output %q is a %s", w.outRefs[name].text, got, name, want)
		}
	}
	return nil
}

// refType is the JSON type a whole-value reference has when the schemas
// say ("" when they don't).
func (w *Workflow) refType(r *reference, lookup Lookup) string {
	if r.root == rootInputs {
		if len(r.path) > 0 {
			return ""
		}
		return jsonTypes[w.InterfaceInputs[r.name].DataFlowType]
	}
	t, ok := lookup(w.Nodes[w.nodeIndex[r.name]].Tool)
	if !ok || len(t.Output) == 0 {
		return ""
	}
	s := decodeSchema(t.Output)
	for _, sg := range r.path {
		props, _ := s["properties"].(map[string]any)
		next, ok := props[sg].(map[string]any)
		if !ok {
			return ""
		}
		s = next
	}
	return typeOf(s)
}

// assignable reports whether a value of JSON type got may feed type want.
func assignable(got, want string) bool {
	return got == want || (got == "integer" && want == "number")
}

// typeOf is a schema's single "type", or "".
func typeOf(s any) string {
	m, _ := s.(map[string]any)
	t, _ := m["type"].(string)
	return t
}

func decodeSchema(raw json.RawMessage) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

func stringList(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// CallCycle returns a chain of workflow tools that leads from start back
// to start ("workflow:a", "workflow:b", "workflow:a"), or nil. calls
// returns the tools a workflow tool calls (nil for any other tool).
func CallCycle(start string, calls func(id string) []string) []string {
	var path []string
	seen := map[string]bool{}
	var walk func(id string) bool
	walk = func(id string) bool {
		path = append(path, id)
		for _, c := range calls(id) {
			c, _, _ = strings.Cut(c, "@")
			if c == start {
				path = append(path, c)
				return true
			}
			if !seen[c] && !slices.Contains(path, c) {
				seen[c] = true
				if walk(c) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		return false
	}
	if walk(start) {
		return path
	}
	return nil
}
