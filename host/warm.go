package host

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host/action"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/runner/wasm"
)

// WarmOptions says what [Host.Warm] prepares.
type WarmOptions struct {
	// Tools are the IDs to warm ("id" or "id@version"); empty warms every
	// WebAssembly tool of the catalogue. IDs that name no loaded tool, and
	// tools of other kinds (whose preparation may start a process), are
	// left out.
	Tools []string
	// Progress, when set, is called once at the start (0 warm) and each
	// time a tool is warm, with how many are and how many there are in
	// all; calls do not overlap.
	Progress func(done, total int)
	// Runnable counts a tool warm once it can run: a tool whose compiled
	// module is still to be built runs on wazero's interpreter, and its
	// compile is not started early (it is reported Cold). A short command
	// sets it: it would exit before using the compiled code (docs/POOLS.md,
	// "Tiers: the interpreter first").
	Runnable bool
}

// WarmReport is what [Host.Warm] did.
type WarmReport struct {
	// Tools is how many tools it prepared.
	Tools int `json:"tools"`
	// Ready lists the tools with an instance ready for a call.
	Ready []string `json:"ready"`
	// Cold lists the tools whose calls each make an instance of their own
	// by nature (no pool: a deterministic tool, a module whose instances
	// cannot be reused, a command that cannot be parked).
	Cold []string `json:"cold,omitempty"`
	// NoBudget lists the tools the pool budget (policy pool.memoryMb) left
	// without a warm instance: the most called were warmed first.
	NoBudget []string `json:"noBudget,omitempty"`
	// Failed lists the tools that failed to load (their calls give
	// LOAD_ERROR) or whose pool could not make an instance (logged; their
	// calls make their own).
	Failed []string `json:"failed,omitempty"`
	// Took is how long it took.
	Took time.Duration `json:"tookNs"`
}

// warmer is implemented by a prepared runner with a pool of instances
// (the WebAssembly runner's).
type warmer interface {
	Warm(ctx context.Context) wasm.WarmState
}

// Warm prepares tools ahead of their calls: each module is compiled (or
// read from the cache), the tool's start-up snapshot taken and its pool's
// first instances made, so the first calls run as fast as the later ones
// (docs/POOLS.md, "Warm ahead of demand"). Tools are prepared at once, as
// many at a time as there are cores, the most called first (by the calls
// this host has served; catalogue order at start), which matters when the
// pool budget cannot hold an instance of every tool. It returns when
// every tool is warm or ctx ends; a tool that fails to prepare is
// reported, never an error.
func (h *Host) Warm(ctx context.Context, opts WarmOptions) WarmReport {
	start := time.Now()
	tools := h.warmTargets(opts.Tools)
	rep := WarmReport{Tools: len(tools)}
	if opts.Progress != nil {
		opts.Progress(0, len(tools))
	}
	var mu sync.Mutex
	done := 0
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for _, t := range tools {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			state := h.warmOne(ctx, t, opts.Runnable)
			mu.Lock()
			defer mu.Unlock()
			switch state {
			case warmReady:
				rep.Ready = append(rep.Ready, t.ToolID)
			case warmCold:
				rep.Cold = append(rep.Cold, t.ToolID)
			case warmNoBudget:
				rep.NoBudget = append(rep.NoBudget, t.ToolID)
			case warmFailed:
				rep.Failed = append(rep.Failed, t.ToolID)
			}
			done++
			if opts.Progress != nil {
				opts.Progress(done, len(tools))
			}
		})
	}
	wg.Wait()
	for _, l := range [][]string{rep.Ready, rep.Cold, rep.NoBudget, rep.Failed} {
		slices.Sort(l)
	}
	if rep.Ready == nil {
		rep.Ready = []string{}
	}
	rep.Took = time.Since(start)
	if len(rep.NoBudget) > 0 {
		h.log.Warn("pool budget too small for a warm instance of every tool; the most called were warmed first", "cold", strings.Join(rep.NoBudget, ","))
	}
	return rep
}

// Outcomes of warmOne.
const (
	warmReady = iota
	warmCold
	warmNoBudget
	warmFailed
	warmCancelled
)

// interpreted is implemented by a prepared WebAssembly tool that may
// run on the interpreter tier.
type interpreted interface {
	Interpreted() bool
}

// warmOne prepares t and waits for its pool's first instances; with
// runnable, a tool on the interpreter tier is left there (cold).
func (h *Host) warmOne(ctx context.Context, t *manifest.Tool, runnable bool) int {
	p, perr := h.prepare(ctx, t)
	switch {
	case perr != nil:
		return warmCancelled
	case p.grant.Denied:
		return warmCold
	case p.err != nil:
		return warmFailed
	}
	if i, ok := p.run.(interpreted); ok && runnable && i.Interpreted() {
		return warmCold
	}
	w, ok := p.run.(warmer)
	if !ok {
		return warmCold
	}
	state := w.Warm(ctx)
	if ctx.Err() != nil {
		return warmCancelled
	}
	switch state {
	case wasm.WarmReady:
		return warmReady
	case wasm.WarmNoBudget:
		return warmNoBudget
	case wasm.WarmFailed:
		return warmFailed
	}
	return warmCold
}

// warmTargets resolves ids (all WebAssembly tools when empty) to loaded
// WebAssembly tools, each once, the most called first.
func (h *Host) warmTargets(ids []string) []*manifest.Tool {
	var tools []*manifest.Tool
	if len(ids) == 0 {
		tools = h.reg.Tools()
	} else {
		for _, id := range ids {
			if t, err := h.reg.Lookup(id); err == nil {
				tools = append(tools, t)
			}
		}
	}
	seen := map[*manifest.Tool]bool{}
	out := tools[:0:0]
	for _, t := range tools {
		if !seen[t] && t.Handler.Type == manifest.HandlerWasm {
			seen[t] = true
			out = append(out, t)
		}
	}
	h.health.mu.Lock()
	calls := map[*manifest.Tool]int64{}
	for _, t := range out {
		if th := h.health.tools[t.ToolID]; th != nil {
			calls[t] = th.Calls
		}
	}
	h.health.mu.Unlock()
	slices.SortStableFunc(out, func(a, b *manifest.Tool) int { return cmp.Compare(calls[b], calls[a]) })
	return out
}

// prepareAhead starts the preparation of every WebAssembly tool an
// output's calls name, without waiting: the calls then run one after
// another while the modules they need compile at once.
func (h *Host) prepareAhead(calls []action.Call, allowed func(id string) bool) {
	if len(calls) < 2 {
		return
	}
	ids := make([]string, 0, len(calls))
	for _, c := range calls {
		if id, _, _ := strings.Cut(c.Tool, "@"); allowed == nil || allowed(id) {
			ids = append(ids, c.Tool)
		}
	}
	for _, t := range h.warmTargets(ids) {
		h.startPrepare(t)
	}
}

// ExecTools returns the IDs of the tools the calls of llmOutput's ACTION
// block name, in order, each once; nil when it has none or does not
// parse. A caller warms them ([Host.Warm]) before [Host.Exec] to show
// progress while their modules compile.
func (h *Host) ExecTools(llmOutput string) []string {
	parsed, err := action.Parse(llmOutput, h.opts.Action)
	if err != nil || parsed == nil {
		return nil
	}
	var ids []string
	for _, c := range parsed.Calls {
		if !slices.Contains(ids, c.Tool) {
			ids = append(ids, c.Tool)
		}
	}
	return ids
}

// backgroundWarm is the state of WarmInBackground.
type backgroundWarm struct {
	mu      sync.Mutex
	started bool
	running bool
	pending bool // a change came while a warm-up ran: run again
	last    WarmReport
	done    bool
}

// WarmInBackground warms every WebAssembly tool ([Host.Warm]) on a
// goroutine of its own, now and again after each change of the catalogue,
// until the host is closed; [Host.WarmStatus] says when it is done. A
// server calls it at start so that no client meets a cold tool. Calling
// it again does nothing.
func (h *Host) WarmInBackground() {
	b := &h.warming
	b.mu.Lock()
	if b.started {
		b.mu.Unlock()
		return
	}
	b.started = true
	b.mu.Unlock()
	h.Subscribe(func(Change) { h.warmAgain() })
	h.warmAgain()
}

// warmAgain runs a background warm-up, or asks the running one to run
// again when it ends.
func (h *Host) warmAgain() {
	b := &h.warming
	b.mu.Lock()
	if b.running {
		b.pending = true
		b.mu.Unlock()
		return
	}
	b.running, b.done = true, false
	b.mu.Unlock()
	go func() {
		for {
			rep := h.Warm(h.life, WarmOptions{})
			b.mu.Lock()
			if b.pending && h.life.Err() == nil {
				b.pending = false
				b.mu.Unlock()
				continue
			}
			b.running, b.done, b.last = false, true, rep
			b.mu.Unlock()
			return
		}
	}()
}

// WarmStatus reports the last background warm-up (WarmInBackground):
// done is false while one runs, or when none was started.
func (h *Host) WarmStatus() (report WarmReport, done bool) {
	b := &h.warming
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last, b.done
}
