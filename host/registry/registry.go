package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/schema"
	"github.com/agenthost/agenthost/host/workflow"
)

// ManifestSuffix is the file name suffix LoadDir looks for.
const ManifestSuffix = ".tool.json"

// maxSuggestions is how many IDs an UNKNOWN_TOOL message offers.
const maxSuggestions = 3

// Failure is a manifest that did not load. ToolID is set when the file
// still named a valid tool ID; Lookup of that ID then gives LOAD_ERROR
// instead of UNKNOWN_TOOL.
type Failure struct {
	Path   string
	ToolID string
	Err    error
}

// Error returns the message of Err, which names the manifest file.
func (f Failure) Error() string {
	if f.Err == nil {
		return "load " + f.Path + ": failed"
	}
	return f.Err.Error()
}

// Unwrap returns Err.
func (f Failure) Unwrap() error { return f.Err }

// UnknownToolDetails is the Details of an UNKNOWN_TOOL error from Lookup.
type UnknownToolDetails struct {
	// Suggestions are the closest loaded IDs, best first.
	Suggestions []string `json:"suggestions,omitempty"`
	// Versions lists the loaded versions when the ID exists but the
	// requested id@version does not.
	Versions []string `json:"versions,omitempty"`
}

// Registry is the tool table of one host: tools by ID and version, plus
// the manifests that failed to load. The zero value is not usable; call
// [New]. Its methods are safe for concurrent use.
type Registry struct {
	mu       sync.RWMutex
	tools    map[string][]*manifest.Tool // by ID, ascending SemVer
	broken   map[string]Failure          // by ID and by id@version
	failures []Failure
}

// New returns an empty Registry.
func New() *Registry {
	return &Registry{tools: map[string][]*manifest.Tool{}, broken: map[string]Failure{}}
}

// LoadDir scans dir recursively for *.tool.json manifests (skipping
// node_modules and folders or files whose name starts with '.'), loads
// each with manifest.Load and adds it. One bad manifest is recorded as a
// Failure and skipped; the others still load. It returns how many tools
// were added and the failures of this call (also kept, see Failures).
//
// Symbolic links to folders inside dir are not followed (a link cycle
// cannot hang the scan); dir itself may be a link.
func (r *Registry) LoadDir(dir string) (loaded int, failures []Failure) {
	return r.LoadDirChecked(dir, nil)
}

// LoadDirChecked is LoadDir with a host-specific check run on every
// manifest that loaded (for example: is its handler type supported, is its
// service registered). A tool the check rejects is a load failure, so it
// is listed as broken and calls to it are LOAD_ERROR, never a tool that
// lists as fine and fails every call.
func (r *Registry) LoadDirChecked(dir string, check func(*manifest.Tool) error) (loaded int, failures []Failure) {
	paths, failures := Scan(dir)
	tools := loadAll(paths)
	paths, tools = dropBoundWorkflows(paths, tools)
	if check != nil {
		for i := range tools {
			if tools[i].err == nil {
				if err := check(tools[i].tool); err != nil {
					tools[i].err = &manifest.Error{Path: paths[i], Pointer: "/handler", Reason: err.Error()}
				}
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, p := range paths {
		t, err := tools[i].tool, tools[i].err
		if err != nil {
			f := Failure{Path: p, Err: err}
			id, version := peekID(p)
			if id != "" {
				f.ToolID = id
				r.broken[id] = f
				if version != "" {
					r.broken[id+"@"+version] = f
				}
			}
			failures = append(failures, f)
			continue
		}
		if err := r.addLocked(t); err != nil {
			failures = append(failures, Failure{Path: p, ToolID: t.ToolID, Err: err})
			continue
		}
		loaded++
	}
	r.failures = append(r.failures, failures...)
	return loaded, failures
}

// Scan lists the manifests (*.tool.json) and workflow files
// (*.workflow.json, each the tool workflow:<id>) under dir, recursively, skipping
// node_modules and names starting with '.'; symbolic links to folders
// inside dir are not followed, dir itself may be a link. Folders that
// cannot be read are returned as failures.
func Scan(dir string) (paths []string, failures []Failure) {
	if fi, err := os.Lstat(dir); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			failures = append(failures, Failure{Path: p, Err: &manifest.Error{Path: p, Reason: "cannot scan", Err: err}})
			if d != nil && d.IsDir() && p != dir {
				return fs.SkipDir
			}
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(name, ".") || name == "node_modules") {
				return fs.SkipDir
			}
			return nil
		}
		if (strings.HasSuffix(name, ManifestSuffix) || strings.HasSuffix(name, workflow.Suffix)) && !strings.HasPrefix(name, ".") {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		failures = append(failures, Failure{Path: dir, Err: &manifest.Error{Path: dir, Reason: "cannot scan", Err: err}})
	}
	return paths, failures
}

type loadResult struct {
	tool *manifest.Tool
	err  error
}

// loadAll loads the manifests on two goroutines (results keep the order of
// paths, so duplicate detection is deterministic).
func loadAll(paths []string) []loadResult {
	out := make([]loadResult, len(paths))
	const workers = 2
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(paths); i += workers {
				t, err := LoadFile(paths[i])
				out[i] = loadResult{t, err}
			}
		}()
	}
	wg.Wait()
	return out
}

// LoadFile loads one file Scan lists: a manifest, or a workflow file as
// the manifest of its tool.
func LoadFile(path string) (*manifest.Tool, error) {
	if strings.HasSuffix(path, workflow.Suffix) {
		return workflow.Manifest(path)
	}
	return manifest.Load(path)
}

// dropBoundWorkflows leaves out the workflow files that a manifest
// (handler type workflow) binds: that manifest is their tool.
func dropBoundWorkflows(paths []string, tools []loadResult) ([]string, []loadResult) {
	bound := map[string]bool{}
	for _, r := range tools {
		if r.err == nil && r.tool.Handler.Type == manifest.HandlerWorkflow && !strings.HasSuffix(r.tool.Path, workflow.Suffix) {
			if f := r.tool.WorkflowFile(); f != "" {
				bound[f] = true
			}
		}
	}
	if len(bound) == 0 {
		return paths, tools
	}
	var ps []string
	var ts []loadResult
	for i, p := range paths {
		if strings.HasSuffix(p, workflow.Suffix) {
			if real, err := filepath.EvalSymlinks(p); err == nil && bound[real] {
				continue
			}
		}
		ps, ts = append(ps, p), append(ts, tools[i])
	}
	return ps, ts
}

// peekID reads the toolId and version of a manifest that failed to load
// (the id of a workflow file), when they are still readable and valid.
func peekID(path string) (id, version string) {
	data, err := os.ReadFile(path)
	if err != nil || len(data) > manifest.MaxManifestBytes {
		return "", ""
	}
	var head struct {
		ToolID  string `json:"toolId"`
		ID      string `json:"id"`
		Version string `json:"version"`
	}
	if json.Unmarshal(data, &head) != nil {
		return "", ""
	}
	if strings.HasSuffix(path, workflow.Suffix) {
		head.ToolID = manifest.NamespaceWorkflow + ":" + head.ID
	}
	if manifest.ValidID(head.ToolID) != nil {
		return "", ""
	}
	if manifest.ValidVersion(head.Version) != nil {
		return head.ToolID, ""
	}
	return head.ToolID, head.Version
}

// Add adds a tool the host built itself (for example a service-method
// tool). It validates t first when that has not happened yet (see
// manifest.Tool.Validate). A second tool with the same ID and version is an
// error naming both; different versions coexist.
func (r *Registry) Add(t *manifest.Tool) error {
	if t == nil {
		return errors.New("registry add: nil tool")
	}
	if !t.Validated() {
		if err := t.Validate(); err != nil {
			return fmt.Errorf("registry add %s: %w", t.ToolID, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addLocked(t)
}

func (r *Registry) addLocked(t *manifest.Tool) error {
	versions := r.tools[t.ToolID]
	for i, o := range versions {
		if t.Path != "" && o.Path == t.Path && o.Version == t.Version {
			// The same manifest loaded again: a no-op when nothing changed
			// (the prepared tool stays warm), else the new one replaces it.
			if !SameTool(o, t) {
				versions[i] = t
			}
			return nil
		}
		if o.Version == t.Version || manifest.CompareVersions(o.Version, t.Version) == 0 {
			return &manifest.Error{
				Path:    t.Path,
				Pointer: "/toolId",
				Reason: fmt.Sprintf("duplicate tool %s version %s: %s and %s both define it",
					t.ToolID, t.Version, where(o), where(t)),
			}
		}
	}
	versions = append(versions, t)
	sort.SliceStable(versions, func(i, j int) bool {
		return manifest.CompareVersions(versions[i].Version, versions[j].Version) < 0
	})
	r.tools[t.ToolID] = versions
	return nil
}

// SameTool reports whether two loads of one manifest file are identical:
// the same manifest content and the same module or script digest.
func SameTool(a, b *manifest.Tool) bool {
	if a.Digest() != b.Digest() {
		return false
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// where names a tool's origin in messages.
func where(t *manifest.Tool) string {
	if t.Path == "" {
		return "(registered by the host)"
	}
	return t.Path
}

// Lookup finds a tool by "id" (the highest SemVer version) or
// "id@version". It returns an *abi.Error: UNKNOWN_TOOL with the closest
// IDs in the message ("unknown tool 'x'; did you mean 'a', 'b'?") and in
// Details ([UnknownToolDetails]), or LOAD_ERROR when the tool's manifest
// was found but failed to load.
func (r *Registry) Lookup(id string) (*manifest.Tool, error) {
	name, version, hasVersion := strings.Cut(id, "@")
	r.mu.RLock()
	defer r.mu.RUnlock()
	versions := r.tools[name]
	if !hasVersion {
		if len(versions) > 0 {
			return versions[len(versions)-1], nil
		}
		if f, ok := r.broken[name]; ok {
			return nil, loadError(id, f)
		}
		return nil, r.unknownLocked(name)
	}
	for _, t := range versions {
		if t.Version == version {
			return t, nil
		}
	}
	for _, t := range versions {
		if manifest.CompareVersions(t.Version, version) == 0 && manifest.ValidVersion(version) == nil {
			return t, nil
		}
	}
	if f, ok := r.broken[id]; ok {
		return nil, loadError(id, f)
	}
	if len(versions) == 0 {
		if f, ok := r.broken[name]; ok {
			return nil, loadError(id, f)
		}
		return nil, r.unknownLocked(name)
	}
	have := make([]string, len(versions))
	for i, t := range versions {
		have[i] = t.Version
	}
	return nil, (&abi.Error{
		Code:    abi.CodeUnknownTool,
		Message: fmt.Sprintf("unknown version '%s' of tool '%s'; available: %s", version, name, strings.Join(have, ", ")),
	}).WithDetails(UnknownToolDetails{Versions: have})
}

func loadError(id string, f Failure) *abi.Error {
	return abi.Errorf(abi.CodeLoadError, "tool '%s' failed to load: %s", id, f.Error())
}

func (r *Registry) unknownLocked(id string) *abi.Error {
	ids := make([]string, 0, len(r.tools))
	for k := range r.tools {
		ids = append(ids, k)
	}
	sort.Strings(ids)
	sugg := schema.Suggest(id, ids, maxSuggestions)
	msg := fmt.Sprintf("unknown tool '%s'", id)
	if len(sugg) > 0 {
		q := make([]string, len(sugg))
		for i, s := range sugg {
			q[i] = "'" + s + "'"
		}
		msg += "; did you mean " + strings.Join(q, ", ") + "?"
	}
	e := &abi.Error{Code: abi.CodeUnknownTool, Message: msg}
	if len(sugg) > 0 {
		e.Details = UnknownToolDetails{Suggestions: sugg}
	}
	return e
}

// Tools returns the highest version of every tool, sorted by ID.
func (r *Registry) Tools() []*manifest.Tool {
	return r.Filter("", "")
}

// Versions returns every loaded version of id, lowest SemVer first; nil
// when there is none.
func (r *Registry) Versions(id string) []*manifest.Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v := r.tools[id]
	if len(v) == 0 {
		return nil
	}
	return append([]*manifest.Tool(nil), v...)
}

// Filter returns the highest version of every tool in namespace (the part
// of the ID before ':') that carries tag, sorted by ID. An empty namespace
// or tag matches every tool.
func (r *Registry) Filter(namespace, tag string) []*manifest.Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*manifest.Tool
	for id, versions := range r.tools {
		if namespace != "" && !strings.HasPrefix(id, namespace+":") {
			continue
		}
		t := versions[len(versions)-1]
		if tag != "" && !hasTag(t, tag) {
			continue
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ToolID < out[j].ToolID })
	return out
}

func hasTag(t *manifest.Tool, tag string) bool {
	for _, x := range t.Tags {
		if x == tag {
			return true
		}
	}
	return false
}

// Failures returns every failure recorded so far, in load order.
func (r *Registry) Failures() []Failure {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]Failure(nil), r.failures...)
}

// Remove drops every version of the tool id ("id", or "id@version" for
// one version) and reports whether anything was removed.
func (r *Registry) Remove(id string) bool {
	name, version, hasVersion := strings.Cut(id, "@")
	r.mu.Lock()
	defer r.mu.Unlock()
	versions := r.tools[name]
	if !hasVersion {
		delete(r.tools, name)
		return len(versions) > 0
	}
	for i, t := range versions {
		if t.Version == version {
			r.tools[name] = append(versions[:i:i], versions[i+1:]...)
			if len(r.tools[name]) == 0 {
				delete(r.tools, name)
			}
			return true
		}
	}
	return false
}

// All returns every tool of every version, sorted by ID then version.
func (r *Registry) All() []*manifest.Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*manifest.Tool
	ids := make([]string, 0, len(r.tools))
	for id := range r.tools {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		out = append(out, r.tools[id]...)
	}
	return out
}

// Swap replaces r's contents with o's in one step: a reader sees either
// the old catalogue or the new one, never a mix. o must not be used
// afterwards.
func (r *Registry) Swap(o *Registry) {
	o.mu.Lock()
	tools, broken, failures := o.tools, o.broken, o.failures
	o.mu.Unlock()
	r.mu.Lock()
	r.tools, r.broken, r.failures = tools, broken, failures
	r.mu.Unlock()
}

// Keep puts prev in place of cur (the same tool, loaded again unchanged),
// so that whatever was prepared for prev stays in use.
func (r *Registry) Keep(prev, cur *manifest.Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	vs := r.tools[cur.ToolID]
	for i, t := range vs {
		if t == cur {
			vs[i] = prev
		}
	}
}

// Reject removes t, which loaded, and records it as a load failure with
// err: for checks that need the whole catalogue (a workflow whose tools
// are missing). Lookup of its ID then gives LOAD_ERROR.
func (r *Registry) Reject(t *manifest.Tool, err error) Failure {
	r.Remove(t.ToolID + "@" + t.Version)
	f := Failure{Path: t.Path, ToolID: t.ToolID, Err: err}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.broken[t.ToolID] = f
	r.broken[t.ToolID+"@"+t.Version] = f
	r.failures = append(r.failures, f)
	return f
}

// AddFailure records a load failure found outside a folder scan (an MCP
// server without pins); Lookup of its tool ID then gives LOAD_ERROR.
func (r *Registry) AddFailure(f Failure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f.ToolID != "" {
		r.broken[f.ToolID] = f
	}
	r.failures = append(r.failures, f)
}
