package host

import (
	"context"
	"encoding/json"
	"github.com/agenthost/agenthost/host/runner"
	"runtime"
	"sort"
	"sync"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
)

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

// BatchCall is one call of a Batch.
type BatchCall struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

// Batch runs calls concurrently (at most twice the CPUs at a time) and
// returns one envelope per call, in order.
func (h *Host) Batch(ctx context.Context, calls []BatchCall) []abi.Envelope {
	out := make([]abi.Envelope, len(calls))
	sem := make(chan struct{}, 2*runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = h.Call(ctx, c.Tool, c.Args)
		}()
	}
	wg.Wait()
	return out
}
