package workflow

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// maxValueDepth bounds how deeply node arguments and outputs may nest.
const maxValueDepth = 64

// Reference roots.
const (
	rootInputs = iota
	rootNodes
)

// value is a compiled argument or output value: a literal, an object, an
// array, a whole-value reference (keeps the JSON type) or an
// interpolated string.
type value interface {
	// eval resolves the value; ok is false when it is a reference to an
	// optional input that was not given (the key is then left out).
	eval(s *scope) (v any, ok bool, err error)
	// refs appends every reference in the value with its JSON Pointer.
	refs(at []string, out *[]refUse)
}

// refUse is a reference and where it is used.
type refUse struct {
	ref   *reference
	at    string // JSON Pointer below the value's root
	whole bool   // the whole value is the reference (not interpolated)
}

type literal struct{ v any }

type object struct {
	keys []string
	vals []value
}

type array struct{ items []value }

// reference is ${inputs.NAME.path…} or ${nodes.ID.output.path…}.
type reference struct {
	text string
	root int
	name string
	path []string
}

// interp is a string with references inside: each is replaced by its
// text (strings as they are, other values as compact JSON).
type interp struct {
	lits []string // len(rs)+1 literal pieces around the references
	rs   []*reference
}

// compileValue compiles a decoded JSON value (json.Number for numbers).
func compileValue(v any, where string, depth int) (value, error) {
	if depth > maxValueDepth {
		return nil, errorf(where, "nested deeper than %d levels", maxValueDepth)
	}
	switch x := v.(type) {
	case map[string]any:
		o := &object{}
		for _, k := range sortedKeys(x) {
			c, err := compileValue(x[k], where+"/"+escape(k), depth+1)
			if err != nil {
				return nil, err
			}
			o.keys = append(o.keys, k)
			o.vals = append(o.vals, c)
		}
		return o, nil
	case []any:
		a := &array{}
		for i, e := range x {
			c, err := compileValue(e, where+"/"+strconv.Itoa(i), depth+1)
			if err != nil {
				return nil, err
			}
			a.items = append(a.items, c)
		}
		return a, nil
	case string:
		return compileString(x, where)
	}
	return literal{v}, nil
}

// compileString finds the ${…} references of s. "$${" is a literal "${".
func compileString(s, where string) (value, error) {
	if !strings.Contains(s, "${") {
		return literal{s}, nil
	}
	var lits []string
	var refs []*reference
	var cur strings.Builder
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$${") {
			cur.WriteString("${")
			i += 3
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			cur.WriteByte(s[i])
			i++
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return nil, errorf(where, "%q: a reference opened with ${ is not closed with }", snippet(s[i:]))
		}
		r, err := parseRef(s[i : i+end+1])
		if err != nil {
			return nil, errorf(where, "%s", err.Error())
		}
		lits = append(lits, cur.String())
		cur.Reset()
		refs = append(refs, r)
		i += end + 1
	}
	lits = append(lits, cur.String())
	if len(refs) == 0 {
		return literal{lits[0]}, nil
	}
	if len(refs) == 1 && lits[0] == "" && lits[1] == "" {
		return refs[0], nil
	}
	return &interp{lits: lits, rs: refs}, nil
}

// parseRef parses one "${…}".
func parseRef(text string) (*reference, error) {
	body := strings.TrimSpace(text[2 : len(text)-1])
	segs := strings.Split(body, ".")
	for _, sg := range segs {
		if sg == "" || strings.ContainsAny(sg, " \t\n$\"'{[]") {
			return nil, fmt.Errorf("%s: want ${inputs.NAME} or ${nodes.ID.output} followed by .field or .index segments", text)
		}
	}
	r := &reference{text: text}
	switch {
	case segs[0] == "inputs" && len(segs) >= 2:
		r.root, r.name, r.path = rootInputs, segs[1], segs[2:]
	case segs[0] == "nodes" && len(segs) >= 3 && segs[2] == "output":
		r.root, r.name, r.path = rootNodes, segs[1], segs[3:]
	case segs[0] == "nodes":
		return nil, fmt.Errorf("%s: a node's value is ${nodes.ID.output} (optionally .field…)", text)
	default:
		return nil, fmt.Errorf("%s: a reference starts with inputs. or nodes. (as in ${inputs.NAME})", text)
	}
	return r, nil
}

// scope is what references resolve against during a run.
type scope struct {
	w       *Workflow
	inputs  map[string]any
	outputs []nodeOutput
}

// nodeOutput is a finished node's output: the raw JSON, decoded on first
// use by a path or an interpolation.
type nodeOutput struct {
	raw     json.RawMessage
	decoded any
	done    bool
}

func (o *nodeOutput) value() (any, error) {
	if !o.done {
		if err := decodeNumber(o.raw, &o.decoded); err != nil {
			return nil, err
		}
		o.done = true
	}
	return o.decoded, nil
}

func (w *Workflow) resolve(s *scope, r *reference) (any, bool, error) {
	var v any
	if r.root == rootInputs {
		iv, ok := s.inputs[r.name]
		if !ok {
			return nil, false, nil
		}
		v = iv
	} else {
		o := &s.outputs[w.nodeIndex[r.name]]
		if len(r.path) == 0 && !o.done {
			return o.raw, true, nil
		}
		dv, err := o.value()
		if err != nil {
			return nil, false, fmt.Errorf("%s: node %q gave output that is not JSON", r.text, r.name)
		}
		v = dv
	}
	for i, sg := range r.path {
		switch x := v.(type) {
		case map[string]any:
			nv, ok := x[sg]
			if !ok {
				return nil, false, fmt.Errorf("%s: %q has no field %q", r.text, strings.Join(append([]string{r.name}, r.path[:i]...), "."), sg)
			}
			v = nv
		case []any:
			n, err := strconv.Atoi(sg)
			if err != nil || n < 0 || n >= len(x) {
				return nil, false, fmt.Errorf("%s: %q is an array of %d; %q is not an index in it", r.text, strings.Join(append([]string{r.name}, r.path[:i]...), "."), len(x), sg)
			}
			v = x[n]
		default:
			return nil, false, fmt.Errorf("%s: %q is not an object or array", r.text, strings.Join(append([]string{r.name}, r.path[:i]...), "."))
		}
	}
	return v, true, nil
}

func (l literal) eval(*scope) (any, bool, error) { return l.v, true, nil }
func (literal) refs([]string, *[]refUse)         {}

func (o *object) eval(s *scope) (any, bool, error) {
	m := make(map[string]any, len(o.keys))
	for i, k := range o.keys {
		v, ok, err := o.vals[i].eval(s)
		if err != nil {
			return nil, false, err
		}
		if ok {
			m[k] = v
		}
	}
	return m, true, nil
}

func (o *object) refs(at []string, out *[]refUse) {
	for i, k := range o.keys {
		o.vals[i].refs(append(at, escape(k)), out)
	}
}

func (a *array) eval(s *scope) (any, bool, error) {
	l := make([]any, len(a.items))
	for i, it := range a.items {
		v, _, err := it.eval(s)
		if err != nil {
			return nil, false, err
		}
		l[i] = v
	}
	return l, true, nil
}

func (a *array) refs(at []string, out *[]refUse) {
	for i, it := range a.items {
		it.refs(append(at, strconv.Itoa(i)), out)
	}
}

func (r *reference) eval(s *scope) (any, bool, error) { return s.w.resolve(s, r) }

func (r *reference) refs(at []string, out *[]refUse) {
	*out = append(*out, refUse{ref: r, at: pointer(at), whole: true})
}

func (p *interp) eval(s *scope) (any, bool, error) {
	var b strings.Builder
	for i, r := range p.rs {
		b.WriteString(p.lits[i])
		v, ok, err := s.w.resolve(s, r)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			continue
		}
		switch x := v.(type) {
		case string:
			b.WriteString(x)
		case json.RawMessage:
			var str string
			if json.Unmarshal(x, &str) == nil {
				b.WriteString(str)
			} else {
				b.Write(x)
			}
		default:
			j, _ := json.Marshal(x)
			b.Write(j)
		}
	}
	b.WriteString(p.lits[len(p.lits)-1])
	return b.String(), true, nil
}

func (p *interp) refs(at []string, out *[]refUse) {
	for _, r := range p.rs {
		*out = append(*out, refUse{ref: r, at: pointer(at)})
	}
}

func pointer(at []string) string {
	if len(at) == 0 {
		return ""
	}
	return "/" + strings.Join(at, "/")
}

func escape(k string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}

func snippet(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
