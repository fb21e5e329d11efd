package audit

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/wire"
	"github.com/agenthost/agenthost/host/workflow"
)

// Entry is one tool to audit: a loaded tool with its effective grant, or a
// manifest that failed to load (LoadError set; Tool may be nil). An entry
// with neither a Tool nor a LoadError is ignored.
type Entry struct {
	Tool      *manifest.Tool
	Grant     *policy.Grant // nil is reported as nothing granted
	LoadError error
	Path      string // the manifest path; "" means Tool.Path
	// Widenings are grant rules the tool's runner can only enforce more
	// coarsely than written (the script bridge's Landlock rules cover
	// whole folders), each as a sentence; they are reported as a risk.
	Widenings []string
}

// Environment describes the protections the machine offers, as probed by
// the subprocess bridge (landlock, user namespaces, network namespace,
// rlimits ...). It may be empty.
type Environment struct {
	Protections []Protection
}

// Protection is one isolation mechanism and whether it is available here.
type Protection struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	Detail    string `json:"detail,omitempty"`
}

// Report is the audit of a set of tools under one policy.
type Report struct {
	Summary     Summary      `json:"summary"`
	Tools       []Tool       `json:"tools"`
	LoadErrors  []LoadError  `json:"loadErrors"`
	Environment []Protection `json:"environment"`
}

// Summary counts what the report holds.
type Summary struct {
	Tools       int `json:"tools"`
	Denied      int `json:"denied"`
	WithDenials int `json:"withDenials"`
	WithRisks   int `json:"withRisks"`
	LoadErrors  int `json:"loadErrors"`
}

// Tool is the audit of one loaded tool.
type Tool struct {
	ID      string  `json:"id"`
	Version string  `json:"version"`
	Path    string  `json:"path"`
	Handler Handler `json:"handler"`
	Digest  string  `json:"digest,omitempty"` // "sha256:<hex>" from handler.sha256, or of the script file
	// DepsDigest covers a script tool's dependency files (requirements.txt,
	// package.json and lockfiles, every file under wheels/): "sha256:<hex>",
	// or "" when it has none.
	DepsDigest string `json:"depsDigest,omitempty"`
	Denied     bool   `json:"denied"`
	Workspace  string `json:"workspace"`

	Files   Files           `json:"files"`
	Network Network         `json:"network"`
	Env     Env             `json:"env"`
	Limits  Limits          `json:"limits"`
	Denials []policy.Denial `json:"denials"`
	Risks   []Risk          `json:"risks"`
	// SchemaRewrites says how the parameter schema had to be rewritten
	// for model providers (a top-level oneOf they refuse, say); empty
	// when they take it as written. The host still validates against the
	// manifest's schema, but the model only sees the rewrite.
	SchemaRewrites []string `json:"schemaRewrites,omitempty"`
	// Calls and Reach are set for a workflow: the tools its nodes call,
	// and what they may touch together (the union of their grants, through
	// nested workflows). A workflow gains no capability of its own: its
	// reach is its nodes'.
	Calls []string `json:"calls,omitempty"`
	Reach *Reach   `json:"reach,omitempty"`
	// Imports are a wasm module's imports ("wasi_snapshot_preview1.fd_write").
	Imports []string `json:"imports,omitempty"`
	// History is what a store recorded of the tool's calls (see
	// AddHistory); nil without a store.
	History *History `json:"history,omitempty"`
}

// History is the failure analytics of one tool: its recorded calls, how
// many failed, and the failures by error code.
type History struct {
	Calls    int64            `json:"calls"`
	Failures int64            `json:"failures"`
	Codes    map[string]int64 `json:"codes"`
}

// CallCount is a number of recorded calls of a tool with one outcome.
type CallCount struct {
	Tool   string
	Status string
	Code   string
	Calls  int64
}

// AddHistory attaches recorded calls to the report's tools (by tool ID;
// counts of tools not in the report are dropped).
func (r *Report) AddHistory(counts []CallCount) {
	byID := map[string]*Tool{}
	for i := range r.Tools {
		byID[r.Tools[i].ID] = &r.Tools[i]
	}
	for _, c := range counts {
		t := byID[c.Tool]
		if t == nil {
			continue
		}
		if t.History == nil {
			t.History = &History{Codes: map[string]int64{}}
		}
		t.History.Calls += c.Calls
		if c.Status != "success" {
			t.History.Failures += c.Calls
			code := c.Code
			if code == "" {
				code = "unknown"
			}
			t.History.Codes[code] += c.Calls
		}
	}
}

// Reach is the union of the grants of the tools a workflow calls.
type Reach struct {
	Read    []string `json:"read"`
	Write   []string `json:"write"`
	Mounts  []string `json:"mounts"`
	Network []string `json:"network"`
	Env     []string `json:"env"`
	// Missing lists called tools that are not in the report.
	Missing []string `json:"missing,omitempty"`
}

// Handler summarises how a tool runs.
type Handler struct {
	Type     string `json:"type"`
	ABI      string `json:"abi,omitempty"`
	Language string `json:"language,omitempty"`
	Module   string `json:"module,omitempty"` // module or scriptPath
	Service  string `json:"service,omitempty"`
}

// Files is requested against granted file access. Paths use the manifest
// syntax: workspace-relative, or $TOOL/, $CACHE/, $TMP/; mounts are
// "guestPath -> folder".
type Files struct {
	Requested FileSet `json:"requested"`
	Granted   FileSet `json:"granted"`
}

// FileSet is one side of Files.
type FileSet struct {
	Read   []string `json:"read"`
	Write  []string `json:"write"`
	Mounts []string `json:"mounts"`
}

// Network is requested against granted hosts.
type Network struct {
	Requested    []string `json:"requested"`
	Granted      []string `json:"granted"`
	AllowPrivate bool     `json:"allowPrivateAddresses"`
}

// Env is requested against granted variable names (never values).
type Env struct {
	Requested []string `json:"requested"`
	Granted   []string `json:"granted"`
}

// Limits is requested against granted limits.
type Limits struct {
	Requested LimitValues `json:"requested"`
	Granted   LimitValues `json:"granted"`
}

// LimitValues are limits in manifest units. In Requested, zero means not
// requested; in Granted, Fuel 0 means not metered.
type LimitValues struct {
	TimeoutMs      int64  `json:"timeoutMs"`
	MemoryMb       int64  `json:"memoryMb"`
	MaxOutputBytes int64  `json:"maxOutputBytes"`
	Fuel           uint64 `json:"fuel"`
	Deterministic  bool   `json:"deterministic"`
}

// LoadError is a manifest that failed to load.
type LoadError struct {
	Path   string `json:"path"`
	ToolID string `json:"toolId,omitempty"`
	Error  string `json:"error"`
}

// Risk is one thing a reviewer should look at, with the evidence.
type Risk struct {
	Flag   string `json:"flag"`
	Detail string `json:"detail"`
}

// Risk flags, in the order a tool's risks are listed.
const (
	RiskWorkspaceWrite = "writes to workspace"
	RiskWholeWorkspace = "reads the whole workspace"
	RiskNetwork        = "network access"
	RiskWildcardHost   = "wildcard host"
	RiskPrivate        = "private addresses allowed"
	RiskSecrets        = "receives secrets (env)"
	RiskNoFuel         = "no fuel limit with long timeout"
	RiskUnpinned       = "unpinned module (no sha256)"
	RiskDegraded       = "degraded isolation"
	RiskWidened        = "enforced coarser than granted"
	RiskNativeCode     = "runs native code"
	RiskInProcess      = "in-process, trusted"
	RiskImportsSockets = "imports sockets without a network grant"
	RiskImportsHTTP    = "imports http_request without a granted host"
)

// LongTimeout is the timeout from which an unmetered WASM tool is flagged
// RiskNoFuel: it may burn a core that long.
const LongTimeout = 30 * time.Second

const (
	digestPrefix        = "sha256:"
	unknownProtections  = "the machine's protections were not probed"
	allowDegradedDetail = "isolation.allowDegraded is true"
)

// Build audits entries. It does not modify them.
func Build(entries []Entry, env Environment) Report {
	r := Report{
		Tools:       []Tool{},
		LoadErrors:  []LoadError{},
		Environment: append([]Protection{}, env.Protections...),
	}
	for _, e := range entries {
		path := e.Path
		if path == "" && e.Tool != nil {
			path = e.Tool.Path
		}
		if e.LoadError != nil {
			le := LoadError{Path: path, Error: e.LoadError.Error()}
			if e.Tool != nil {
				le.ToolID = e.Tool.ToolID
			}
			r.LoadErrors = append(r.LoadErrors, le)
			continue
		}
		if e.Tool == nil {
			continue
		}
		tool := buildTool(e.Tool, e.Grant, path, env)
		if len(e.Widenings) > 0 {
			tool.Risks = append(tool.Risks, Risk{RiskWidened, strings.Join(e.Widenings, "; ")})
		}
		r.Tools = append(r.Tools, tool)
	}
	slices.SortStableFunc(r.Tools, func(a, b Tool) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), compareVersions(a.Version, b.Version), cmp.Compare(a.Path, b.Path))
	})
	r.workflowReach()
	slices.SortStableFunc(r.LoadErrors, func(a, b LoadError) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.ToolID, b.ToolID), cmp.Compare(a.Error, b.Error))
	})
	r.Summary = Summary{Tools: len(r.Tools), LoadErrors: len(r.LoadErrors)}
	for _, t := range r.Tools {
		if t.Denied {
			r.Summary.Denied++
		}
		if len(t.Denials) > 0 {
			r.Summary.WithDenials++
		}
		if len(t.Risks) > 0 {
			r.Summary.WithRisks++
		}
	}
	return r
}

func buildTool(t *manifest.Tool, g *policy.Grant, path string, env Environment) Tool {
	if g == nil {
		g = &policy.Grant{ToolID: t.ToolID, Denied: true}
	}
	out := Tool{
		ID: t.ToolID, Version: t.Version, Path: path,
		Handler:   handlerOf(t.Handler),
		Denied:    g.Denied,
		Workspace: g.Workspace,
		Denials:   append([]policy.Denial{}, g.Denials...),
	}
	switch {
	case t.Handler.SHA256 != "":
		out.Digest = digestPrefix + strings.ToLower(t.Handler.SHA256)
	case t.Digest() != "":
		out.Digest = digestPrefix + t.Digest() // a script as read at load
	}
	if t.Handler.Type == manifest.HandlerScript {
		out.DepsDigest = depsDigest(t)
	}
	sc := t.SecurityContext
	if sc == nil {
		sc = &manifest.SecurityContext{}
	}
	out.Files.Requested = FileSet{Read: []string{}, Write: []string{}, Mounts: []string{}}
	if fa := sc.FileAccess; fa != nil {
		out.Files.Requested.Read = append(out.Files.Requested.Read, fa.AllowRead...)
		out.Files.Requested.Write = append(out.Files.Requested.Write, fa.AllowWrite...)
		for _, gp := range slices.Sorted(mapsKeys(fa.Mounts)) {
			out.Files.Requested.Mounts = append(out.Files.Requested.Mounts, gp+" -> "+fa.Mounts[gp])
		}
	}
	out.Files.Granted = FileSet{Read: ruleStrings(g.Read), Write: ruleStrings(g.Write), Mounts: []string{}}
	for _, m := range g.Mounts {
		out.Files.Granted.Mounts = append(out.Files.Granted.Mounts, m.GuestPath+" -> "+m.Folder)
	}
	out.Network = Network{Requested: []string{}, Granted: []string{}, AllowPrivate: g.AllowPrivate}
	if na := sc.NetworkAccess; na != nil {
		out.Network.Requested = append(out.Network.Requested, na.AllowHosts...)
	}
	for _, h := range g.Hosts {
		out.Network.Granted = append(out.Network.Granted, h.String())
	}
	out.Env = Env{Requested: append([]string{}, sc.Env...), Granted: append([]string{}, g.EnvNames...)}
	if l := sc.Limits; l != nil {
		out.Limits.Requested = LimitValues{TimeoutMs: l.TimeoutMs, MemoryMb: l.MemoryMb, MaxOutputBytes: l.MaxOutputBytes, Fuel: l.Fuel, Deterministic: l.Deterministic}
	}
	if !g.Denied {
		out.Limits.Granted = LimitValues{
			TimeoutMs:      g.Limits.Timeout.Milliseconds(),
			MemoryMb:       int64(g.Limits.MemoryBytes >> 20),
			MaxOutputBytes: g.Limits.MaxOutputBytes,
			Fuel:           g.Limits.Fuel,
			Deterministic:  g.Limits.Deterministic,
		}
	}
	out.Risks = risks(t, g, env)
	out.SchemaRewrites = wire.Adapt(t.Parameters).Rewrites
	if p := t.ModulePath(); p != "" {
		if b, err := os.ReadFile(p); err == nil {
			out.Imports, _ = Imports(b)
		}
		out.Risks = append(out.Risks, importRisks(out.Imports, len(g.Hosts) > 0)...)
	}
	if t.Handler.Type == manifest.HandlerWorkflow {
		if w, err := workflow.Load(t.WorkflowFile()); err == nil {
			out.Calls = w.Tools()
		}
	}
	return out
}

// importRisks flags imports the grant gives no use: sockets (WASI
// preview 1 sock_*) or Extism's http_request without a granted host. The
// calls would be refused; the reviewer learns the module wants them.
func importRisks(imports []string, hasHosts bool) []Risk {
	if hasHosts {
		return nil
	}
	var socks, http []string
	for _, im := range imports {
		switch {
		case strings.HasPrefix(im, "wasi_snapshot_preview1.sock_"):
			socks = append(socks, im)
		case im == "extism:host/env.http_request":
			http = append(http, im)
		}
	}
	var out []Risk
	if len(socks) > 0 {
		out = append(out, Risk{RiskImportsSockets, strings.Join(socks, ", ")})
	}
	if len(http) > 0 {
		out = append(out, Risk{RiskImportsHTTP, strings.Join(http, ", ")})
	}
	return out
}

// workflowReach fills Reach for every workflow: the union of what the
// tools it calls were granted, following nested workflows.
func (r *Report) workflowReach() {
	byID := map[string]*Tool{}
	for i := range r.Tools {
		t := &r.Tools[i]
		byID[t.ID] = t // sorted by version: the last is the highest
		byID[t.ID+"@"+t.Version] = t
	}
	for i := range r.Tools {
		t := &r.Tools[i]
		if t.Handler.Type != manifest.HandlerWorkflow {
			continue
		}
		sets := map[string]map[string]bool{"read": {}, "write": {}, "mounts": {}, "network": {}, "env": {}}
		missing := map[string]bool{}
		seen := map[string]bool{t.ID: true}
		var walk func(calls []string)
		walk = func(calls []string) {
			for _, id := range calls {
				if seen[id] {
					continue
				}
				seen[id] = true
				n, ok := byID[id]
				if !ok {
					missing[id] = true
					continue
				}
				if n.Handler.Type == manifest.HandlerWorkflow {
					walk(n.Calls)
					continue
				}
				if n.Denied {
					continue
				}
				for name, xs := range map[string][]string{"read": n.Files.Granted.Read, "write": n.Files.Granted.Write, "mounts": n.Files.Granted.Mounts, "network": n.Network.Granted, "env": n.Env.Granted} {
					for _, x := range xs {
						if strings.HasPrefix(x, "$TOOL") || strings.HasPrefix(x, "$CACHE") {
							x += " (" + n.ID + ")" // each tool has its own folders
						}
						sets[name][x] = true
					}
				}
			}
		}
		walk(t.Calls)
		sorted := func(m map[string]bool) []string { return append([]string{}, slices.Sorted(maps.Keys(m))...) }
		t.Reach = &Reach{Read: sorted(sets["read"]), Write: sorted(sets["write"]), Mounts: sorted(sets["mounts"]),
			Network: sorted(sets["network"]), Env: sorted(sets["env"])}
		if len(missing) > 0 {
			t.Reach.Missing = sorted(missing)
		}
	}
}

func handlerOf(h manifest.Handler) Handler {
	out := Handler{Type: h.Type}
	switch h.Type {
	case manifest.HandlerWasm:
		out.ABI = h.ABI
		if out.ABI == "" {
			out.ABI = manifest.ABIWasiCommand
		}
		out.Module = h.Module
	case manifest.HandlerScript:
		out.Language = h.Language
		out.Module = h.ScriptPath
	case manifest.HandlerServiceMethod:
		out.Service = h.ServiceName + "." + h.MethodName
	case manifest.HandlerWorkflow:
		out.Module = h.Workflow
	case manifest.HandlerMCP:
		out.Service = "mcp server " + h.Server + ", tool " + h.Tool
	}
	return out
}

// risks lists the risk flags of a tool, in the order of the Risk consts.
func risks(t *manifest.Tool, g *policy.Grant, env Environment) []Risk {
	out := []Risk{}
	var ws []string
	for _, r := range g.Write {
		if r.Root == policy.RootWorkspace {
			ws = append(ws, r.Pattern)
		}
	}
	if len(ws) > 0 {
		out = append(out, Risk{RiskWorkspaceWrite, strings.Join(ws, ", ")})
	}
	for _, r := range g.Read {
		if r.Root == policy.RootWorkspace && r.Pattern == "**" {
			out = append(out, Risk{RiskWholeWorkspace, "read **"})
			break
		}
	}
	if len(g.Hosts) > 0 {
		hosts := make([]string, len(g.Hosts))
		var wild []string
		for i, h := range g.Hosts {
			hosts[i] = h.String()
			if strings.Contains(h.Host, "*") {
				wild = append(wild, h.String())
			}
		}
		out = append(out, Risk{RiskNetwork, strings.Join(hosts, ", ")})
		if len(wild) > 0 {
			out = append(out, Risk{RiskWildcardHost, strings.Join(wild, ", ")})
		}
		if g.AllowPrivate {
			out = append(out, Risk{RiskPrivate, "granted hosts may resolve to loopback, private, link-local or metadata addresses"})
		}
	}
	if len(g.EnvNames) > 0 {
		out = append(out, Risk{RiskSecrets, strings.Join(g.EnvNames, ", ")})
	}
	if t.Handler.Type == manifest.HandlerWasm && !g.Denied && g.Limits.Fuel == 0 && g.Limits.Timeout >= LongTimeout {
		out = append(out, Risk{RiskNoFuel, "unmetered for up to " + g.Limits.Timeout.String()})
	}
	if t.Handler.Type == manifest.HandlerWasm && t.Handler.SHA256 == "" {
		out = append(out, Risk{RiskUnpinned, "module " + strconv.Quote(t.Handler.Module) + " is not checked against a digest"})
	}
	if t.Handler.Type == manifest.HandlerServiceMethod && !g.Denied {
		out = append(out, Risk{RiskInProcess, "a Go function of the host application: no sandbox; the grant rules only what the host hands it (workspace files, HTTP client, env)"})
	}
	if t.Handler.Type == manifest.HandlerScript && !g.Denied {
		out = append(out, Risk{RiskNativeCode, t.Handler.Language + " interpreter outside the WASM sandbox, confined by kernel isolation only"})
	}
	if t.Handler.Type == manifest.HandlerScript && g.AllowDegraded && !g.Denied {
		detail := allowDegradedDetail
		var missing []string
		for _, p := range env.Protections {
			if !p.Available {
				missing = append(missing, p.Name)
			}
		}
		switch {
		case len(env.Protections) == 0:
			detail += "; " + unknownProtections
		case len(missing) > 0:
			detail += "; unavailable here: " + strings.Join(missing, ", ")
		}
		if len(env.Protections) == 0 || len(missing) > 0 {
			out = append(out, Risk{RiskDegraded, detail})
		}
	}
	return out
}

func ruleStrings(rs []policy.PathRule) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.String())
	}
	return out
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// compareVersions orders SemVer strings: the core numerically ("1.10.0"
// after "1.9.0"), a pre-release before its release, build metadata
// ignored, and plain string order as the last word (also for anything that
// is not SemVer).
func compareVersions(a, b string) int {
	ac, apre := splitVersion(a)
	bc, bpre := splitVersion(b)
	if c := compareDotted(ac, bc); c != 0 {
		return c
	}
	switch {
	case apre == "" && bpre != "":
		return 1
	case apre != "" && bpre == "":
		return -1
	}
	return cmp.Or(compareDotted(apre, bpre), cmp.Compare(a, b))
}

// splitVersion returns the core and pre-release parts of a version.
func splitVersion(v string) (core, pre string) {
	v, _, _ = strings.Cut(v, "+")
	core, pre, _ = strings.Cut(v, "-")
	return core, pre
}

// compareDotted compares dot-separated identifiers, numerically where
// both are numbers.
func compareDotted(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, errx := strconv.ParseUint(as[i], 10, 64)
		y, erry := strconv.ParseUint(bs[i], 10, 64)
		var c int
		switch {
		case errx == nil && erry == nil:
			c = cmp.Compare(x, y)
		case errx == nil:
			c = -1 // numeric identifiers sort before alphanumeric ones
		case erry == nil:
			c = 1
		default:
			c = cmp.Compare(as[i], bs[i])
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(as), len(bs))
}

// String formats limit values for text and Markdown; zero fields are
// left out ("-" when all are).
func (l LimitValues) String() string {
	var parts []string
	if l.TimeoutMs != 0 {
		parts = append(parts, "timeout "+(time.Duration(l.TimeoutMs)*time.Millisecond).String())
	}
	if l.MemoryMb != 0 {
		parts = append(parts, "memory "+strconv.FormatInt(l.MemoryMb, 10)+" MiB")
	}
	if l.MaxOutputBytes != 0 {
		parts = append(parts, "output "+formatBytes(l.MaxOutputBytes))
	}
	if l.Fuel != 0 {
		parts = append(parts, "fuel "+strconv.FormatUint(l.Fuel, 10))
	}
	if l.Deterministic {
		parts = append(parts, "deterministic")
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return fmt.Sprintf("%d B", n)
}
