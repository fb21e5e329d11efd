package host

import (
	"sort"
	"sync"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/audit"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/script"
)

// Audit builds the security reviewer's report: for every loaded tool (all
// versions) the requested against the granted capabilities, denials and
// risk flags; for every broken manifest its load error; and which kernel
// protections the script bridge can apply on this machine.
func (h *Host) Audit() audit.Report {
	var entries []audit.Entry
	for _, t := range h.reg.Tools() {
		for _, v := range h.reg.Versions(t.ToolID) {
			g := h.grant(v)
			e := audit.Entry{Tool: v, Grant: g, Path: v.Path}
			if v.Handler.Type == manifest.HandlerScript {
				for _, w := range script.Widenings(g) {
					e.Widenings = append(e.Widenings, w.String())
				}
			}
			entries = append(entries, e)
		}
	}
	for _, f := range h.reg.Failures() {
		entries = append(entries, audit.Entry{Path: f.Path, LoadError: f.Err})
	}
	var env audit.Environment
	for _, p := range script.Protections() {
		env.Protections = append(env.Protections, audit.Protection{Name: p.Name, Available: p.Available, Detail: p.Detail})
	}
	return audit.Build(entries, env)
}

// ToolHealth is the state of one tool in the catalogue.
type ToolHealth struct {
	ID      string `json:"id"`
	Version string `json:"version,omitempty"`
	Kind    string `json:"kind,omitempty"`
	// Loaded is false for a manifest that failed to load (LoadError says
	// why) and for a tool whose preparation failed.
	Loaded    bool   `json:"loaded"`
	LoadError string `json:"loadError,omitempty"`
	// Calls and Failures count the calls since the host started;
	// LastFailure is the most recent failure's error.
	Calls       int64      `json:"calls"`
	Failures    int64      `json:"failures"`
	LastFailure *abi.Error `json:"lastFailure,omitempty"`
	// InFlight is how many calls of the tool run now.
	InFlight int `json:"inFlight"`
	// Pool says how the tool's pool of ready instances served calls (nil
	// for tools without one).
	Pool *runner.PoolStats `json:"pool,omitempty"`
}

// health is the per-tool call record behind Health.
type health struct {
	mu    sync.Mutex
	tools map[string]*ToolHealth
}

func (hh *health) record(env abi.Envelope) {
	if env.Error != nil && env.Error.Code == abi.CodeUnknownTool {
		return // not a tool: model output may name anything
	}
	hh.mu.Lock()
	defer hh.mu.Unlock()
	if hh.tools == nil {
		hh.tools = map[string]*ToolHealth{}
	}
	th := hh.tools[env.ToolID]
	if th == nil {
		th = &ToolHealth{ID: env.ToolID}
		hh.tools[env.ToolID] = th
	}
	th.Calls++
	if env.Error != nil {
		th.Failures++
		th.LastFailure = env.Error
	}
}

// Health reports every tool: loaded ones with their call counts and last
// failure, and the manifests that failed to load, sorted by ID.
func (h *Host) Health() []ToolHealth {
	var out []ToolHealth
	h.health.mu.Lock()
	counts := h.health.tools
	get := func(id string) ToolHealth {
		if th := counts[id]; th != nil {
			return *th
		}
		return ToolHealth{ID: id}
	}
	for _, t := range h.reg.Tools() {
		th := get(t.ToolID)
		th.Version, th.Kind, th.Loaded = t.Version, KindOf(t), true
		h.mu.Lock()
		if p := h.prepared[t]; p != nil {
			select {
			case <-p.done:
				if p.err != nil {
					th.Loaded, th.LoadError = false, p.err.Message
				}
				if st, ok := p.run.(runner.Statser); ok {
					ps := st.PoolStats()
					th.Pool = &ps
				}
				th.InFlight = p.active()
			default:
			}
		}
		h.mu.Unlock()
		out = append(out, th)
	}
	for _, f := range h.reg.Failures() {
		th := get(f.ToolID)
		if th.ID == "" {
			th.ID = f.Path
		}
		th.LoadError = f.Error()
		out = append(out, th)
	}
	h.health.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
