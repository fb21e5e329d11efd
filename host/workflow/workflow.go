package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/agenthost/agenthost/host/manifest"
)

// Suffix is the file name ending of a workflow file.
const Suffix = ".workflow.json"

// Limits on what a workflow file may hold; beyond them it does not load.
const (
	// MaxBytes bounds a workflow file.
	MaxBytes = 1 << 20
	// MaxNodes bounds a workflow's nodes.
	MaxNodes = 256
	// MaxDepth bounds workflows calling workflows at run time.
	MaxDepth = 8
	// MaxParallel bounds the nodes of one run that call at once.
	MaxParallel = 4
)

// Workflow is one parsed and checked workflow file.
type Workflow struct {
	ID               string                `json:"id"`
	Name             string                `json:"name,omitempty"`
	Description      string                `json:"description"`
	Version          string                `json:"version"`
	TimeoutMs        int64                 `json:"timeoutMs,omitempty"`
	Tags             []string              `json:"tags,omitempty"`
	InterfaceInputs  map[string]Port       `json:"interfaceInputs"`
	InterfaceOutputs map[string]Port       `json:"interfaceOutputs"`
	Nodes            []Node                `json:"nodes"`
	Outputs          map[string]any        `json:"outputs"`
	Tests            []Test                `json:"tests,omitempty"`
	nodeIndex        map[string]int        // node ID → index in Nodes
	deps             [][]int               // node index → the nodes it reads
	args             []value               // node index → compiled arguments
	outputs          map[string]value      // output name → compiled value
	inputNames       map[string]bool       // declared inputs
	refs             map[int][]refUse      // node index → references in its arguments, for Check
	outRefs          map[string]*reference // output name → its whole-value reference, if any
}

// Port is one interface input or output.
type Port struct {
	Description     string      `json:"description,omitempty"`
	DataFlowType    string      `json:"dataFlowType"`
	Required        bool        `json:"required,omitempty"`
	MatchCategories []string    `json:"matchCategories,omitempty"`
	Config          *PortConfig `json:"config,omitempty"`
	IsStream        bool        `json:"isStream,omitempty"`
}

// PortConfig holds a port's default and suggested values.
type PortConfig struct {
	Default     any          `json:"default,omitempty"`
	Suggestions []Suggestion `json:"suggestions,omitempty"`
}

// Suggestion is one suggested value of a port.
type Suggestion struct {
	Value any    `json:"value"`
	Label string `json:"label,omitempty"`
}

// Node is one tool call of the workflow.
type Node struct {
	ID   string         `json:"id"`
	Tool string         `json:"tool"`
	Args map[string]any `json:"args,omitempty"`
}

// Test is an input and the output the workflow must give for it; they run
// as the tool's examples.
type Test struct {
	Description    string          `json:"description,omitempty"`
	Input          json.RawMessage `json:"input"`
	ExpectedOutput json.RawMessage `json:"expectedOutput,omitempty"`
}

// errorf is a load error at a JSON Pointer of the workflow file (the
// caller sets the path).
func errorf(where, format string, args ...any) *manifest.Error {
	return &manifest.Error{Pointer: where, Reason: fmt.Sprintf(format, args...)}
}

// Parse parses a workflow file's bytes and checks everything that needs
// no catalogue: the fields (unknown ones are errors), the interface types,
// the node IDs and tool IDs, every reference's syntax and target, the
// dependency order (a cycle is an error naming it), and the outputs.
func Parse(data []byte) (*Workflow, error) {
	if len(data) > MaxBytes {
		return nil, errorf("", "the file is %d bytes; the limit is %d", len(data), MaxBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	w := &Workflow{}
	if err := dec.Decode(w); err != nil {
		return nil, errorf("", "invalid workflow JSON: %s", err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errorf("", "invalid workflow JSON: more than one value")
	}
	if err := w.compile(); err != nil {
		return nil, err
	}
	return w, nil
}

// compile checks w and builds its run plan.
func (w *Workflow) compile() error {
	if err := manifest.ValidID(manifest.NamespaceWorkflow + ":" + w.ID); err != nil {
		return errorf("/id", "id %q: want lower-case letters, digits, '.', '_' and '-', starting with a letter", w.ID)
	}
	if strings.TrimSpace(w.Description) == "" {
		return errorf("/description", "a workflow needs a description (the model reads it)")
	}
	if w.Version == "" {
		w.Version = "1.0.0"
	}
	if err := manifest.ValidVersion(w.Version); err != nil {
		return errorf("/version", "%s", err.Error())
	}
	if w.TimeoutMs < 0 {
		return errorf("/timeoutMs", "timeoutMs must not be negative")
	}
	w.inputNames = map[string]bool{}
	for _, name := range sortedKeys(w.InterfaceInputs) {
		p := w.InterfaceInputs[name]
		where := "/interfaceInputs/" + name
		if !validName(name) {
			return errorf(where, "input name %q: want letters, digits, '_' and '-', starting with a letter or '_'", name)
		}
		if _, err := p.schema(); err != nil {
			return errorf(where, "%s", err.Error())
		}
		if p.IsStream {
			return errorf(where+"/isStream", "streamed inputs are not supported")
		}
		w.inputNames[name] = true
	}
	if len(w.InterfaceOutputs) == 0 {
		return errorf("/interfaceOutputs", "a workflow needs at least one interface output")
	}
	for _, name := range sortedKeys(w.InterfaceOutputs) {
		p := w.InterfaceOutputs[name]
		where := "/interfaceOutputs/" + name
		if !validName(name) {
			return errorf(where, "output name %q: want letters, digits, '_' and '-', starting with a letter or '_'", name)
		}
		if _, err := p.schema(); err != nil {
			return errorf(where, "%s", err.Error())
		}
		if p.IsStream {
			return errorf(where+"/isStream", "streamed outputs need an async jobs API, which this host does not have yet; declare the output without isStream")
		}
	}
	if len(w.Nodes) == 0 {
		return errorf("/nodes", "a workflow needs at least one node")
	}
	if len(w.Nodes) > MaxNodes {
		return errorf("/nodes", "%d nodes; the limit is %d", len(w.Nodes), MaxNodes)
	}
	w.nodeIndex = map[string]int{}
	for i, n := range w.Nodes {
		where := fmt.Sprintf("/nodes/%d", i)
		if !validName(n.ID) {
			return errorf(where+"/id", "node id %q: want letters, digits, '_' and '-', starting with a letter or '_'", n.ID)
		}
		if j, dup := w.nodeIndex[n.ID]; dup {
			return errorf(where+"/id", "node id %q is used twice (nodes %d and %d)", n.ID, j, i)
		}
		id, _, _ := strings.Cut(n.Tool, "@")
		if err := manifest.ValidID(id); err != nil {
			return errorf(where+"/tool", "%s", err.Error())
		}
		if id == manifest.NamespaceWorkflow+":"+w.ID {
			return errorf(where+"/tool", "a workflow cannot call itself")
		}
		w.nodeIndex[n.ID] = i
	}
	w.deps = make([][]int, len(w.Nodes))
	w.args = make([]value, len(w.Nodes))
	w.refs = map[int][]refUse{}
	for i, n := range w.Nodes {
		where := fmt.Sprintf("/nodes/%d/args", i)
		v, err := compileValue(n.Args, where, 0)
		if err != nil {
			return err
		}
		w.args[i] = v
		seen := map[int]bool{}
		var uses []refUse
		v.refs(nil, &uses)
		for _, u := range uses {
			if err := w.checkRef(u.ref, where+u.at); err != nil {
				return err
			}
			if u.ref.root == rootNodes {
				j := w.nodeIndex[u.ref.name]
				if j == i {
					return errorf(where+u.at, "node %q refers to its own output", n.ID)
				}
				if !seen[j] {
					seen[j] = true
					w.deps[i] = append(w.deps[i], j)
				}
			}
		}
		w.refs[i] = uses
	}
	if cyc := w.cycle(); cyc != nil {
		return errorf("/nodes", "the nodes form a cycle: %s", strings.Join(cyc, " → "))
	}
	w.outputs = map[string]value{}
	w.outRefs = map[string]*reference{}
	for _, name := range sortedKeys(w.Outputs) {
		if _, ok := w.InterfaceOutputs[name]; !ok {
			return errorf("/outputs/"+name, "output %q is not declared in interfaceOutputs (declared: %s)", name, strings.Join(sortedKeys(w.InterfaceOutputs), ", "))
		}
	}
	for _, name := range sortedKeys(w.InterfaceOutputs) {
		raw, ok := w.Outputs[name]
		if !ok {
			return errorf("/outputs", "interface output %q has no value in outputs", name)
		}
		where := "/outputs/" + name
		v, err := compileValue(raw, where, 0)
		if err != nil {
			return err
		}
		var uses []refUse
		v.refs(nil, &uses)
		for _, u := range uses {
			if err := w.checkRef(u.ref, where+u.at); err != nil {
				return err
			}
		}
		if r, ok := v.(*reference); ok {
			w.outRefs[name] = r
		}
		w.outputs[name] = v
	}
	return nil
}

// checkRef checks that a reference names a declared input or a node.
func (w *Workflow) checkRef(r *reference, where string) error {
	switch r.root {
	case rootInputs:
		if !w.inputNames[r.name] {
			return errorf(where, "%s: no input %q (inputs: %s)", r.text, r.name, orNone(sortedKeys(w.InterfaceInputs)))
		}
	case rootNodes:
		if _, ok := w.nodeIndex[r.name]; !ok {
			ids := make([]string, len(w.Nodes))
			for i, n := range w.Nodes {
				ids[i] = n.ID
			}
			return errorf(where, "%s: no node %q (nodes: %s)", r.text, r.name, strings.Join(ids, ", "))
		}
	}
	return nil
}

// cycle returns the node IDs of a dependency cycle, or nil.
func (w *Workflow) cycle() []string {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(w.Nodes))
	var stack []int
	var found []string
	var visit func(i int) bool
	visit = func(i int) bool {
		color[i] = grey
		stack = append(stack, i)
		for _, j := range w.deps[i] {
			if color[j] == grey {
				for k := len(stack) - 1; k >= 0; k-- {
					if stack[k] == j {
						for _, s := range stack[k:] {
							found = append(found, w.Nodes[s].ID)
						}
						found = append(found, w.Nodes[j].ID)
						return true
					}
				}
			}
			if color[j] == white && visit(j) {
				return true
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
		return false
	}
	for i := range w.Nodes {
		if color[i] == white && visit(i) {
			return found
		}
	}
	return nil
}

// ToolID is the ID of the workflow's tool.
func (w *Workflow) ToolID() string { return manifest.NamespaceWorkflow + ":" + w.ID }

// Tools returns the IDs of the tools the nodes call, sorted, without
// repeats ("id@version" pins kept).
func (w *Workflow) Tools() []string {
	set := map[string]bool{}
	for _, n := range w.Nodes {
		set[n.Tool] = true
	}
	return sortedKeys(set)
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
		case (r >= '0' && r <= '9' || r == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
