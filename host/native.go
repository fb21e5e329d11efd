package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/runner/native"
)

// Tool is a tool the host application supplies in Go, not from a manifest
// file: build one with [Func] and add it with [Options.Tools] or
// [Host.Register].
type Tool struct {
	manifest *manifest.Tool
	fn       native.Func
	err      error
}

// Manifest returns the tool's manifest (schemas derived from its Go
// types); nil when Func failed (see [Host.Register]'s error).
func (t Tool) Manifest() *manifest.Tool { return t.manifest }

// FuncOption adjusts a [Func] tool's manifest.
type FuncOption func(*funcSpec)

type funcSpec struct {
	displayName, version string
	tags                 []string
	examples             []manifest.Example
	sc                   *manifest.SecurityContext
	service, method      string
	ui                   map[string]string
	idempotent, async    bool
}

// WithUI sets display hints for the tool's result ({"kind": "table",
// "rows": "/items"}), handed on as ui_hints by the agent loop.
func WithUI(hints map[string]string) FuncOption { return func(s *funcSpec) { s.ui = hints } }

// WithIdempotent marks the tool safe to retry with the same arguments
// (MCP's idempotentHint).
func WithIdempotent() FuncOption { return func(s *funcSpec) { s.idempotent = true } }

// WithAsync marks the tool's calls as long: agenthost serve answers them
// with a job handle (see manifest.Tool.Async).
func WithAsync() FuncOption { return func(s *funcSpec) { s.async = true } }

// WithDisplayName sets the human name (default: the ID).
func WithDisplayName(name string) FuncOption { return func(s *funcSpec) { s.displayName = name } }

// WithVersion sets the SemVer version (default 1.0.0).
func WithVersion(v string) FuncOption { return func(s *funcSpec) { s.version = v } }

// WithTags sets the tool's tags.
func WithTags(tags ...string) FuncOption { return func(s *funcSpec) { s.tags = tags } }

// WithExample adds an example; input must validate against the derived
// parameter schema, like a manifest's examples.
func WithExample(description string, input, expectedOutput any) FuncOption {
	return func(s *funcSpec) {
		in, _ := json.Marshal(input)
		ex := manifest.Example{Description: description, Input: in}
		if expectedOutput != nil {
			ex.ExpectedOutput, _ = json.Marshal(expectedOutput)
		}
		s.examples = append(s.examples, ex)
	}
}

// WithSecurityContext sets what the tool requests (file access, network,
// env, limits): the policy's ceiling still applies, and [FS], [WriteFile],
// [HTTPClient] and [Env] hand the tool only the effective grant.
func WithSecurityContext(sc manifest.SecurityContext) FuncOption {
	return func(s *funcSpec) { s.sc = &sc }
}

// WithService binds the function to a service and method, so that a
// manifest with handler "service-method" naming them runs it (default:
// the ID's namespace and name).
func WithService(service, method string) FuncOption {
	return func(s *funcSpec) { s.service, s.method = service, method }
}

// Func makes a Go function a tool. The parameter and output schemas are
// derived from In and Out (github.com/google/jsonschema-go: exported
// fields, `json` tags for names and omitempty for optional fields,
// `jsonschema` tags for descriptions; and an `enum:"a,b,c"` tag for the
// allowed values of a string field) and compiled by the same validator as
// manifests. The function gets the validated arguments decoded into In;
// its Out is the call's output. An error that is an *abi.Error keeps its
// code, any other is TOOL_ERROR.
func Func[In, Out any](id, description string, fn func(context.Context, In) (Out, error), opts ...FuncOption) Tool {
	spec := funcSpec{displayName: id, version: "1.0.0"}
	ns, name, _ := strings.Cut(id, ":")
	spec.service, spec.method = ns, name
	for _, o := range opts {
		o(&spec)
	}
	in, err := jsonschema.For[In](nil)
	if err != nil {
		return Tool{err: fmt.Errorf("native tool %s: parameters: %w", id, err)}
	}
	applyEnums(reflect.TypeFor[In](), in)
	out, err := jsonschema.For[Out](nil)
	if err != nil {
		return Tool{err: fmt.Errorf("native tool %s: output: %w", id, err)}
	}
	applyEnums(reflect.TypeFor[Out](), out)
	doc := map[string]any{
		"toolId": id, "displayName": spec.displayName, "description": description, "version": spec.version,
		"handler":    map[string]any{"type": manifest.HandlerServiceMethod, "serviceName": spec.service, "methodName": spec.method},
		"parameters": in,
	}
	if out.Type == "object" {
		doc["output"] = out
	}
	if len(spec.tags) > 0 {
		doc["tags"] = spec.tags
	}
	if len(spec.examples) > 0 {
		doc["examples"] = spec.examples
	}
	if spec.sc != nil {
		doc["securityContext"] = spec.sc
	}
	if spec.ui != nil {
		doc["ui"] = spec.ui
	}
	if spec.idempotent {
		doc["idempotent"] = true
	}
	if spec.async {
		doc["async"] = true
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return Tool{err: fmt.Errorf("native tool %s: %w", id, err)}
	}
	m, err := manifest.Parse(b, "")
	if err != nil {
		return Tool{err: fmt.Errorf("native tool %s: %w", id, err)}
	}
	call := func(ctx context.Context, input []byte) ([]byte, error) {
		var v In
		if err := json.Unmarshal(input, &v); err != nil {
			return nil, abi.Errorf(abi.CodeInvalidArguments, "arguments do not fit %T: %s", v, err.Error())
		}
		res, err := fn(ctx, v)
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	}
	return Tool{manifest: m, fn: call}
}

// Register adds a Go tool to the catalogue: new calls see it at once. Its
// function also serves manifests loaded later whose handler names its
// service and method. A second tool with the same ID and version is an
// error naming both.
func (h *Host) Register(t Tool) error {
	if t.err != nil {
		return t.err
	}
	if t.manifest == nil {
		return errors.New("register: an empty Tool (build one with host.Func)")
	}
	h.cat.mu.Lock()
	defer h.cat.mu.Unlock()
	hd := t.manifest.Handler
	h.native.Register(hd.ServiceName, hd.MethodName, t.fn)
	if err := h.reg.Add(t.manifest); err != nil {
		return fmt.Errorf("register %s: %w", t.manifest.ToolID, err)
	}
	h.log.Debug("registered native tool", "tool", t.manifest.ToolID)
	ch := Change{Added: []string{t.manifest.ToolID + "@" + t.manifest.Version}}
	if h.hasWorkflows() {
		// A workflow that waited for this tool may load now.
		wch, _ := h.rebuild(h.cat.dirs)
		ch.Added = append(ch.Added, wch.Added...)
		ch.Failed = wch.Failed
	}
	h.notify(ch)
	return nil
}

// Unregister removes the tool id ("id" or "id@version") from the
// catalogue: new calls get UNKNOWN_TOOL, calls in flight finish.
func (h *Host) Unregister(id string) error {
	h.cat.mu.Lock()
	defer h.cat.mu.Unlock()
	if !h.reg.Remove(id) {
		return abi.Errorf(abi.CodeUnknownTool, "unregister: no tool %q", id)
	}
	ch := Change{Removed: []string{id}}
	if h.hasWorkflows() {
		// A workflow calling this tool no longer loads.
		wch, _ := h.rebuild(h.cat.dirs)
		ch.Removed = append(ch.Removed, wch.Removed...)
		ch.Failed = wch.Failed
	}
	h.retireGone()
	h.log.Debug("unregistered tool", "tool", id)
	h.notify(ch)
	return nil
}

// applyEnums adds the allowed values of `enum:"a,b"` struct tags to s, the
// schema derived from t, through nested structs, pointers and slices.
func applyEnums(t reflect.Type, s *jsonschema.Schema) {
	for s != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		if t.Kind() != reflect.Pointer {
			s = s.Items
		}
		t = t.Elem()
	}
	if s == nil || t.Kind() != reflect.Struct {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		ps := s.Properties[name]
		if ps == nil {
			continue
		}
		if vals, ok := f.Tag.Lookup("enum"); ok {
			ps.Enum = nil
			for _, v := range strings.Split(vals, ",") {
				ps.Enum = append(ps.Enum, strings.TrimSpace(v))
			}
		}
		applyEnums(f.Type, ps)
	}
}
