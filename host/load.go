package host

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/registry"
	"github.com/agenthost/agenthost/host/toolpack"
)

// Change is one change of the catalogue, told to subscribers.
type Change struct {
	// Added, Changed and Removed list tool IDs ("id@version").
	Added, Changed, Removed []string
	// Failed are the manifests that failed to load in this change; a tool
	// that loaded before keeps its previous version.
	Failed []registry.Failure
}

// empty reports whether c says nothing.
func (c Change) empty() bool {
	return len(c.Added)+len(c.Changed)+len(c.Removed)+len(c.Failed) == 0
}

// catalogue is the live part of a Host: the loaded folders, the
// subscribers, and the serialisation of changes.
type catalogue struct {
	mu     sync.Mutex // one change at a time
	dirs   []string
	subsMu sync.Mutex
	subs   map[int]func(Change)
	nextID int
}

// Subscribe calls fn after each change of the catalogue (Load, Unload,
// Reload, Register, Unregister), on the goroutine that made the change.
// The returned function unsubscribes.
func (h *Host) Subscribe(fn func(Change)) (cancel func()) {
	c := &h.cat
	c.subsMu.Lock()
	if c.subs == nil {
		c.subs = map[int]func(Change){}
	}
	id := c.nextID
	c.nextID++
	c.subs[id] = fn
	c.subsMu.Unlock()
	return func() {
		c.subsMu.Lock()
		delete(c.subs, id)
		c.subsMu.Unlock()
	}
}

func (h *Host) notify(ch Change) {
	if ch.empty() {
		return
	}
	c := &h.cat
	c.subsMu.Lock()
	fns := make([]func(Change), 0, len(c.subs))
	for _, fn := range c.subs {
		fns = append(fns, fn)
	}
	c.subsMu.Unlock()
	for _, fn := range fns {
		fn(ch)
	}
}

// Load scans dir recursively for *.tool.json manifests and adds them. It
// fails only when dir itself cannot be read. Loading a folder again is a
// reload of that folder: unchanged tools stay as they are (still warm),
// changed ones are replaced, calls in flight finish on the version they
// started with.
func (h *Host) Load(dir string) error {
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("load toolpack %s: %w", dir, err)
	}
	h.cat.mu.Lock()
	defer h.cat.mu.Unlock()
	if !contains(h.cat.dirs, dir) {
		h.cat.dirs = append(h.cat.dirs, dir)
	}
	ch, err := h.rebuild(h.cat.dirs)
	h.notify(ch)
	return err
}

// Unload removes the tools loaded from dir. Calls in flight finish; the
// tools' pools are freed once they have.
func (h *Host) Unload(dir string) error {
	h.cat.mu.Lock()
	defer h.cat.mu.Unlock()
	if !contains(h.cat.dirs, dir) {
		return fmt.Errorf("unload %s: not loaded", dir)
	}
	h.cat.dirs = remove(h.cat.dirs, dir)
	ch, err := h.rebuild(h.cat.dirs)
	h.notify(ch)
	return err
}

// Reload rescans every loaded folder and swaps the catalogue in one step.
// New calls see the new catalogue; calls in flight finish on the version
// they started with, whose pools are freed once drained. Unchanged tools
// are not touched. A manifest that now fails to load keeps its previous
// working version, and Reload returns a LOAD_ERROR naming it.
func (h *Host) Reload() error {
	h.cat.mu.Lock()
	defer h.cat.mu.Unlock()
	ch, err := h.rebuild(h.cat.dirs)
	h.notify(ch)
	return err
}

// rebuild loads dirs into a new table, keeps what did not change (same
// pointer, so preparations stay), keeps the previous version of a tool
// whose manifest now fails, re-adds the registered Go tools, and swaps it
// in. The caller holds h.cat.mu.
func (h *Host) rebuild(dirs []string) (Change, error) {
	next := registry.New()
	var failures []registry.Failure
	for _, dir := range dirs {
		_, f := next.LoadDirChecked(dir, h.dirCheck(dir))
		failures = append(failures, f...)
	}
	imported, f := h.importedTools()
	for _, t := range imported {
		if err := next.Add(t); err != nil {
			f = append(f, registry.Failure{Path: t.Path, ToolID: t.ToolID, Err: err})
		}
	}
	for _, fl := range f {
		next.AddFailure(fl)
	}
	failures = append(failures, f...)
	old := h.reg.All()
	byPath := map[string]*manifest.Tool{}
	for _, t := range old {
		if t.Path != "" {
			byPath[t.Path] = t
		}
	}
	var ch Change
	seen := map[string]bool{}
	for _, t := range next.All() {
		seen[t.Path] = true
		prev, ok := byPath[t.Path]
		switch {
		case !ok:
			ch.Added = append(ch.Added, t.ToolID+"@"+t.Version)
		case registry.SameTool(prev, t):
			next.Keep(prev, t)
		default:
			ch.Changed = append(ch.Changed, t.ToolID+"@"+t.Version)
		}
	}
	var errs []string
	for _, f := range failures {
		if prev, ok := byPath[f.Path]; ok && !seen[f.Path] {
			// The tool loaded before: keep that version and say why the
			// new one did not load.
			if err := next.Add(prev); err == nil {
				seen[f.Path] = true
			}
			errs = append(errs, f.Error())
		}
	}
	for _, t := range old {
		if t.Path == "" {
			_ = next.Add(t) // a registered Go tool
		}
	}
	// Workflows are checked once every tool they may call is known.
	for _, f := range h.checkWorkflows(next) {
		failures = append(failures, f)
		seen[f.Path] = false
		ch.Added = slices.DeleteFunc(ch.Added, func(a string) bool { return strings.HasPrefix(a, f.ToolID+"@") })
	}
	ch.Failed = failures
	for _, t := range old {
		if t.Path != "" && !seen[t.Path] {
			ch.Removed = append(ch.Removed, t.ToolID+"@"+t.Version)
		}
	}
	for _, f := range failures {
		h.log.Warn("tool failed to load", "path", f.Path, "tool", f.ToolID, "error", f.Err)
	}
	h.reg.Swap(next)
	h.retireGone()
	if len(errs) > 0 {
		return ch, abi.Errorf(abi.CodeLoadError, "reload kept the previous version of %d tool(s) whose manifest no longer loads: %s", len(errs), strings.Join(errs, "; "))
	}
	return ch, nil
}

func contains(dirs []string, d string) bool {
	for _, x := range dirs {
		if x == d {
			return true
		}
	}
	return false
}

func remove(dirs []string, d string) []string {
	out := dirs[:0:0]
	for _, x := range dirs {
		if x != d {
			out = append(out, x)
		}
	}
	return out
}

// dirCheck is the load check of the tools of dir: their handler, and when
// the policy requires signed toolpacks, the folder's signature (every
// tool of a folder that does not verify is a LOAD_ERROR naming why) and
// that the file each tool runs is, as read at load, the signed one.
func (h *Host) dirCheck(dir string) func(*manifest.Tool) error {
	if !h.policy.RequireSignature {
		return h.checkHandler
	}
	v, err := toolpack.Verify(dir, h.policy.Signers(), time.Now())
	if err != nil {
		return func(*manifest.Tool) error { return fmt.Errorf("the policy requires signed toolpacks: %w", err) }
	}
	return func(t *manifest.Tool) error {
		if err := h.checkHandler(t); err != nil {
			return err
		}
		file := t.ModulePath() + t.ScriptFile() + t.WorkflowFile()
		if file == "" {
			return nil
		}
		// The tool's file is an absolute real path (manifest.Load): so
		// must the folder be, or a relative one (the CLI's default
		// ./toolpacks) has no path relative to it.
		real, err := filepath.EvalSymlinks(dir)
		if err == nil {
			real, err = filepath.Abs(real)
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(real, file)
		if err != nil {
			return err
		}
		want, ok := v.Index.SHA256Of(filepath.ToSlash(rel))
		if !ok || want != t.Digest() {
			return fmt.Errorf("the policy requires signed toolpacks: %s changed after the folder was verified", rel)
		}
		return nil
	}
}

// checkHandler rejects at load a tool this host cannot run: a handler type
// with no runner (a service-method tool whose service the host application
// did not register, a workflow tool on a host without the workflow
// engine).
func (h *Host) checkHandler(t *manifest.Tool) error {
	if sc := t.SecurityContext; sc != nil && len(sc.Credentials) > 0 && h.opts.Credentials == nil {
		return fmt.Errorf("the tool requests the credentials %s, and this host has no credential issuer (Options.Credentials; agenthost serve --credential-key)", strings.Join(sc.Credentials, ", "))
	}
	if t.Handler.Type == manifest.HandlerServiceMethod {
		if h.native.Has(t.Handler.ServiceName, t.Handler.MethodName) {
			return nil
		}
		registered := strings.Join(h.native.Services(), ", ")
		if registered == "" {
			registered = "none"
		}
		return fmt.Errorf("handler service-method: the host application registered no service %q with method %q (registered: %s)",
			t.Handler.ServiceName, t.Handler.MethodName, registered)
	}
	if _, ok := h.runners[runnerKey(t)]; ok {
		return nil
	}
	return fmt.Errorf("handler %q is not supported by this host", runnerKey(t))
}

// Query selects tools for [Host.Tools]. Its zero value selects every tool
// a model may call; each field set narrows the selection.
type Query struct {
	// Namespace keeps the tools whose ID starts with Namespace + ":".
	Namespace string
	// Tags keeps the tools carrying every one of them.
	Tags []string
	// Kind keeps the tools of one kind (see [KindOf]): KindWasm, KindNative, ...
	Kind string
	// Uncallable adds the tools a model may not call: those the policy
	// denies and network tools whose grant holds no host. An operator's
	// listing wants them (with their status); a model's tool list never.
	Uncallable bool
}

// Tools returns the highest version of each loaded tool that q selects,
// sorted by ID. Without q.Uncallable it is what a model may be shown:
// tools the policy denies, and network tools whose grant holds no host at
// all (every call would be refused), are left out.
func (h *Host) Tools(q Query) []*manifest.Tool {
	var tag string
	if len(q.Tags) > 0 {
		tag = q.Tags[0] // the registry narrows by one tag; the rest below
	}
	all := h.reg.Filter(q.Namespace, tag)
	out := make([]*manifest.Tool, 0, len(all))
	for _, t := range all {
		if q.selects(t) && (q.Uncallable || h.callable(t)) {
			out = append(out, t)
		}
	}
	return out
}

// selects reports whether t has q's kind and every one of q's tags.
func (q Query) selects(t *manifest.Tool) bool {
	if q.Kind != "" && KindOf(t) != q.Kind {
		return false
	}
	for _, want := range q.Tags {
		if !slices.Contains(t.Tags, want) {
			return false
		}
	}
	return true
}

// callable reports whether calls of t can do what it is for under its
// grant.
func (h *Host) callable(t *manifest.Tool) bool {
	g := h.grant(t)
	if g.Denied {
		return false
	}
	sc := t.SecurityContext
	if sc != nil && sc.NetworkAccess != nil && len(sc.NetworkAccess.AllowHosts) > 0 && len(g.Hosts) == 0 {
		return false
	}
	return true
}

// Tool returns the tool with the given ID ("id" or "id@version"). Its error
// is an *abi.Error: UNKNOWN_TOOL with suggestions, or LOAD_ERROR.
func (h *Host) Tool(id string) (*manifest.Tool, error) { return h.reg.Lookup(id) }

// Failures lists the manifests that failed to load.
func (h *Host) Failures() []registry.Failure { return h.reg.Failures() }

// Tool kinds, as Query and ToolHealth name them.
const (
	KindWasm     = "wasm"
	KindExtism   = "extism"
	KindScript   = "script"
	KindNative   = "native"
	KindWorkflow = "workflow"
	KindMCP      = "mcp"
)

// KindOf names how t runs: wasm (wasi-command), extism, script, native
// (a Go function), workflow or mcp.
func KindOf(t *manifest.Tool) string {
	switch t.Handler.Type {
	case manifest.HandlerWasm:
		if t.Handler.ABI == manifest.ABIExtism {
			return KindExtism
		}
		return KindWasm
	case manifest.HandlerScript:
		return KindScript
	case manifest.HandlerServiceMethod:
		return KindNative
	case manifest.HandlerWorkflow:
		return KindWorkflow
	}
	return t.Handler.Type
}
