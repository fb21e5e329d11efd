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

// FuncSpec describes a Go function as a tool: what a manifest file says
// of a tool on disk, less the schemas, which [Func] derives from the
// function's types. ID and Description are required; every other field's
// zero value is its default.
type FuncSpec struct {
	// ID is the tool ID, "namespace:name".
	ID string
	// Description tells a model what the tool does and when to call it.
	Description string
	// DisplayName is the human name (default: ID).
	DisplayName string
	// Version is the tool's SemVer version (default 1.0.0).
	Version string
	// Tags are the tool's tags, as [Query] selects them.
	Tags []string
	// Examples are calls of the tool, as in a manifest: each Input must
	// validate against the derived parameter schema.
	Examples []manifest.Example
	// SecurityContext is what the tool requests (file access, network,
	// env, limits); nil requests nothing. The policy's ceiling still
	// applies, and [FS], [WriteFile], [HTTPClient] and [Env] hand the
	// tool only the effective grant.
	SecurityContext *manifest.SecurityContext
	// Service and Method bind the function to a service and method, so
	// that a manifest with handler "service-method" naming them runs it
	// (default: the ID's namespace and name).
	Service, Method string
	// UI holds display hints for the tool's result ({"kind": "table",
	// "rows": "/items"}), handed on as ui_hints by the agent loop.
	UI map[string]string
	// Idempotent marks the tool safe to retry with the same arguments
	// (MCP's idempotentHint).
	Idempotent bool
	// Async marks the tool's calls as long: agenthost serve answers them
	// with a job handle (see manifest.Tool.Async).
	Async bool
}

// Func makes a Go function a tool described by spec. The parameter and
// output schemas are derived from In and Out
// (github.com/google/jsonschema-go: exported fields, `json` tags for names
// and omitempty for optional fields, `jsonschema` tags for descriptions;
// and an `enum:"a,b,c"` tag for the allowed values of a string field) and
// compiled by the same validator as manifests. The function gets the
// validated arguments decoded into In; its Out is the call's output. An
// error that is an *abi.Error keeps its code, any other is TOOL_ERROR.
//
// A spec that does not make a valid manifest (no ID, no description, an
// example that does not validate) is reported by [Host.Register], or by
// [New] for [Options.Tools].
func Func[In, Out any](spec FuncSpec, fn func(context.Context, In) (Out, error)) Tool {
	id := spec.ID
	if id == "" {
		// Every default below derives from the ID: say so before the
		// manifest's checks report each empty field.
		return Tool{err: errors.New("native tool: FuncSpec.ID is empty")}
	}
	if spec.DisplayName == "" {
		spec.DisplayName = id
	}
	if spec.Version == "" {
		spec.Version = "1.0.0"
	}
	ns, name, _ := strings.Cut(id, ":")
	if spec.Service == "" {
		spec.Service = ns
	}
	if spec.Method == "" {
		spec.Method = name
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
		"toolId": id, "displayName": spec.DisplayName, "description": spec.Description, "version": spec.Version,
		"handler":    map[string]any{"type": manifest.HandlerServiceMethod, "serviceName": spec.Service, "methodName": spec.Method},
		"parameters": in,
	}
	if out.Type == "object" {
		doc["output"] = out
	}
	if len(spec.Tags) > 0 {
		doc["tags"] = spec.Tags
	}
	if len(spec.Examples) > 0 {
		doc["examples"] = spec.Examples
	}
	if spec.SecurityContext != nil {
		doc["securityContext"] = spec.SecurityContext
	}
	if spec.UI != nil {
		doc["ui"] = spec.UI
	}
	if spec.Idempotent {
		doc["idempotent"] = true
	}
	if spec.Async {
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
