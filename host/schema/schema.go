package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrRemoteRef is returned (wrapped) when a schema refers to a URL that was
// not registered: remote $ref loading is disabled.
var ErrRemoteRef = errors.New("remote $ref loading is disabled")

// memScheme is the only URL scheme a schema may be compiled or registered
// under.
const memScheme = "mem://"

// Compiler compiles schemas that may refer to each other through mem://
// URLs registered with [Compiler.AddResource]. The zero value is not
// usable; call [NewCompiler]. A Compiler is not safe for concurrent
// mutation; the schemas it returns are safe for concurrent use.
type Compiler struct {
	// Noun names the members of objects in validation messages. Empty
	// means tool arguments: "parameter" at the top level and "property"
	// below; a manifest validator sets "field".
	Noun string

	resources map[string][]byte
}

// NewCompiler returns a Compiler with no registered resources.
func NewCompiler() *Compiler {
	return &Compiler{resources: map[string][]byte{}}
}

// AddResource registers raw under url (which must start with mem://) so
// that a later compiled schema can "$ref" it. Registering the same URL twice
// is an error.
func (c *Compiler) AddResource(url string, raw json.RawMessage) error {
	if !strings.HasPrefix(url, memScheme) {
		return fmt.Errorf("schema resource %q: only mem:// URLs can be registered", url)
	}
	if _, ok := c.resources[url]; ok {
		return fmt.Errorf("schema resource %q: already registered", url)
	}
	if _, err := decode(raw); err != nil {
		return fmt.Errorf("schema resource %q: %w", url, err)
	}
	c.resources[url] = bytes.Clone(raw)
	return nil
}

// Compile compiles raw, registered under url (which must start with
// mem://). References may point into raw itself, to the JSON Schema
// meta-schemas, or to resources added with AddResource; anything else is an
// error wrapping [ErrRemoteRef].
func (c *Compiler) Compile(raw json.RawMessage, url string) (*Schema, error) {
	if !strings.HasPrefix(url, memScheme) {
		return nil, fmt.Errorf("compile schema %q: the URL must start with mem://", url)
	}
	doc, err := decode(raw)
	if err != nil {
		return nil, fmt.Errorf("compile schema %s: %w", url, err)
	}
	jc := jsonschema.NewCompiler()
	jc.DefaultDraft(jsonschema.Draft2020)
	jc.UseLoader(refusingLoader{})
	for u, r := range c.resources {
		if u == url {
			continue
		}
		d, err := decode(r)
		if err != nil {
			return nil, fmt.Errorf("compile schema %s: resource %s: %w", url, u, err)
		}
		if err := jc.AddResource(u, d); err != nil {
			return nil, fmt.Errorf("compile schema %s: resource %s: %w", url, u, err)
		}
	}
	if err := jc.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("compile schema %s: %w", url, err)
	}
	js, err := jc.Compile(url)
	if err != nil {
		// santhosh's LoadURLError does not unwrap; restore the chain.
		var le *jsonschema.LoadURLError
		if errors.As(err, &le) && errors.Is(le.Err, ErrRemoteRef) {
			return nil, fmt.Errorf("compile schema %s: %w: %s (register it as a mem:// resource)", url, ErrRemoteRef, le.URL)
		}
		return nil, fmt.Errorf("compile schema %s: %w", url, err)
	}
	if err := checkFanout(js); err != nil {
		return nil, fmt.Errorf("compile schema %s: %w", url, err)
	}
	out := newSchema(js, url)
	out.nounText = c.Noun
	return out, nil
}

// Compile compiles one self-contained schema under url (mem://...). It is
// NewCompiler().Compile(raw, url).
func Compile(raw json.RawMessage, url string) (*Schema, error) {
	return NewCompiler().Compile(raw, url)
}

// refusingLoader is the URL loader of every compiler: nothing is fetched.
type refusingLoader struct{}

// Load refuses every URL.
func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%w: %s", ErrRemoteRef, url)
}

// decode parses one JSON document, keeping numbers exact (json.Number).
func decode(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if d.More() {
		return nil, errors.New("invalid JSON: data after the top-level value")
	}
	if _, err := d.Token(); err == nil {
		return nil, errors.New("invalid JSON: data after the top-level value")
	}
	return v, nil
}

// Schema is a compiled JSON Schema. It is immutable and safe for concurrent
// use.
type Schema struct {
	url      string
	nounText string // see Compiler.Noun
	js       *jsonschema.Schema
	fast     *fastNode // nil when the schema uses keywords the fast path lacks
	// byLocation maps every reachable sub-schema's location to it, to find
	// the candidate names for did-you-mean on an unknown property.
	byLocation map[string]*jsonschema.Schema
	// kinds caches allowedKinds of every reachable schema for Coerce.
	kinds map[*jsonschema.Schema]uint8
	// anyObject is set when the schema holds for every object and for
	// nothing else (see AnyObject).
	anyObject bool
}

func newSchema(js *jsonschema.Schema, url string) *Schema {
	s := &Schema{url: url, js: js, byLocation: map[string]*jsonschema.Schema{},
		kinds: map[*jsonschema.Schema]uint8{}}
	walk(js, func(n *jsonschema.Schema) {
		s.byLocation[n.Location] = n
		s.kinds[n] = allowedKinds(n, 0)
	})
	s.fast = compileFast(js)
	s.anyObject = s.fast != nil && s.fast.types == tObj && s.fast.onlyTypes()
	return s
}

// AnyObject reports whether the schema holds for every JSON object and for
// no other value (for example {"type": "object"}, whatever its
// description says): a caller holding well-formed JSON text that starts
// with '{' knows it is valid without decoding it.
func (s *Schema) AnyObject() bool { return s.anyObject }

// URL returns the mem:// URL the schema was compiled under.
func (s *Schema) URL() string { return s.url }

// Fast reports whether validation of this schema uses the allocation-free
// fast path (see docs/MANIFEST.md); the result is identical either way.
func (s *Schema) Fast() bool { return s.fast != nil }

// walk calls fn once for every schema reachable from root.
func walk(root *jsonschema.Schema, fn func(*jsonschema.Schema)) {
	seen := map[*jsonschema.Schema]bool{}
	var visit func(*jsonschema.Schema)
	visit = func(n *jsonschema.Schema) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		fn(n)
		for _, c := range children(n) {
			visit(c)
		}
	}
	visit(root)
}

// children lists the direct sub-schemas of n.
func children(n *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	add := func(s ...*jsonschema.Schema) {
		for _, x := range s {
			if x != nil {
				out = append(out, x)
			}
		}
	}
	add(n.Ref, n.RecursiveRef, n.Not, n.If, n.Then, n.Else, n.PropertyNames,
		n.UnevaluatedProperties, n.Contains, n.Items2020, n.UnevaluatedItems, n.ContentSchema)
	if n.DynamicRef != nil {
		add(n.DynamicRef.Ref)
	}
	add(n.AllOf...)
	add(n.AnyOf...)
	add(n.OneOf...)
	add(n.PrefixItems...)
	for _, p := range n.Properties {
		add(p)
	}
	for _, p := range n.PatternProperties {
		add(p)
	}
	for _, p := range n.DependentSchemas {
		add(p)
	}
	for _, d := range n.Dependencies {
		if p, ok := d.(*jsonschema.Schema); ok {
			add(p)
		}
	}
	if p, ok := n.AdditionalProperties.(*jsonschema.Schema); ok {
		add(p)
	}
	if p, ok := n.AdditionalItems.(*jsonschema.Schema); ok {
		add(p)
	}
	switch it := n.Items.(type) {
	case *jsonschema.Schema:
		add(it)
	case []*jsonschema.Schema:
		add(it...)
	}
	return out
}
