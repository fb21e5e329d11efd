package wasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/agenthost/agenthost/host/internal/limitio"
	"github.com/agenthost/agenthost/host/internal/meter"
	"github.com/agenthost/agenthost/host/internal/sandboxfs"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
)

// prepared is one tool ready to run. Its fields do not change after
// Prepare and its mount pool is safe for concurrent use, so Run is too;
// all per-call state lives in a call and its (pooled, reset) mount set.
type prepared struct {
	r        *Runner
	toolID   string
	logger   hclog.Logger
	compiled wazero.CompiledModule
	// rt is the runtime compiled belongs to: the runner's compiler, or
	// its interpreter when interp (tier.go).
	rt      wazero.Runtime
	interp  bool
	checker sandboxfs.Checker // the grant's file rules
	mounts  []mount
	limits  policy.Limits
	// mountPool holds idle *mountSet values.
	mountPool sync.Pool
	// base is the module config shared by every call: args, environment,
	// clocks, no start function (Run calls _start itself).
	base wazero.ModuleConfig
	// fast is the pre-initialised state of a reactor tool (snapshot.go);
	// nil for a command, which starts fresh from _start.
	fast *fastPath
	// command is the pool of parked instances of a command tool
	// (park.go); nil for a reactor or a command that cannot be parked.
	command *commandPath
	// callsTools: the module imports agenthost_tools.call (toolcall.go).
	callsTools bool
}

// commandPath is what a command's parked instances share: the rewritten
// module's global exports (rewriteModule) and their pool.
type commandPath struct {
	globals []string
	counter int
	// fds is the number of descriptors every instance starts with
	// (stdio, "/" and the mounts), for the fd check.
	fds   uint32
	slots *slotPool
}

// callLimits returns limits with this runner's default
// in place of each unset limit.
func callLimits(limits policy.Limits) policy.Limits {
	if limits.Timeout <= 0 {
		limits.Timeout = DefaultTimeout
	}
	if limits.MemoryBytes == 0 {
		limits.MemoryBytes = DefaultMemoryBytes
	}
	if limits.MaxOutputBytes <= 0 {
		limits.MaxOutputBytes = DefaultMaxOutputBytes
	}
	return limits
}

func (r *Runner) newPrepared(tool *manifest.Tool, grant *policy.Grant, mounts []mount, mod wazero.CompiledModule, rt wazero.Runtime) (*prepared, error) {
	limits := callLimits(grant.Limits)
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions().
		WithArgs(args(tool.ToolID, grant.Config)...)
	keys := make([]string, 0, len(grant.Env))
	for k := range grant.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cfg = cfg.WithEnv(k, grant.Env[k])
	}
	if !limits.Deterministic {
		cfg = cfg.WithSysWalltime().WithSysNanotime().WithRandSource(rand.Reader)
	}
	p := &prepared{
		r:        r,
		toolID:   tool.ToolID,
		logger:   r.logger.With("tool", tool.ToolID),
		compiled: mod,
		rt:       rt,
		checker:  grant,
		mounts:   mounts,
		limits:   limits,
		base:     cfg,
	}
	p.callsTools = importsTools(mod)
	// Build the first mount set now: a mount that cannot be built is a
	// load error, not a failure of every call.
	ms, err := newMountSet(p.checker, p.mounts)
	if err != nil {
		return nil, err
	}
	p.mountPool.Put(ms)
	return p, nil
}

// args is the guest's argv: the tool id, then "--key=value" for each
// handler config entry (policy overrides applied), in key order.
func args(toolID string, config map[string]string) []string {
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, 1+len(keys))
	out = append(out, toolID)
	for _, k := range keys {
		out = append(out, "--"+k+"="+config[k])
	}
	return out
}

// mountSet is the file systems of one call: a sandboxfs per mount, the
// deny-all "/" and the wazero FSConfig holding them. Building the config
// is a large part of a call's own cost (wazero copies it per mount), so
// sets are pooled per prepared tool and reset between calls; a set serves
// one call at a time and no state of one call survives the reset (every
// host folder is reopened lazily, $TMP is a new folder, the refusal
// record is emptied).
type mountSet struct {
	denials *sandboxfs.Denials
	fss     []*sandboxfs.FS
	fsc     wazero.FSConfig
}

// newMountSet builds a mount set for the prepared tool.
func newMountSet(checker sandboxfs.Checker, mounts []mount) (*mountSet, error) {
	plan := make([]sandboxfs.Config, len(mounts))
	for i, m := range mounts {
		plan[i] = m.cfg
	}
	s, err := sandboxfs.NewSet(checker, plan)
	if err != nil {
		return nil, err
	}
	return &mountSet{denials: s.Denials, fss: s.FSs, fsc: s.FSConfig}, nil
}

// mountSet takes a mount set from the pool, or builds one.
func (p *prepared) mountSet() (*mountSet, error) {
	if ms, ok := p.mountPool.Get().(*mountSet); ok {
		for _, fs := range ms.fss {
			fs.Reopen()
		}
		return ms, nil
	}
	return newMountSet(p.checker, p.mounts)
}

// call is the state of one Run.
type call struct {
	stdout *limitio.Writer
	logs   *limitio.Lines
	memory *memoryCap
	budget *meter.Budget // the meter's deadline and fuel state
	mounts *mountSet
	stop   context.CancelCauseFunc
	// rec records (or replays) the guest's clocks and random bytes
	// (record.go); nil for a deterministic tool.
	rec *recorder
}

// newCall sets up the buffers, mounts and memory cap of one call. stop is
// the call's cancel: the stdout cap and the memory cap use it to stop the
// guest.
func (p *prepared) newCall(stop context.CancelCauseFunc) (*call, error) {
	ms, err := p.mountSet()
	if err != nil {
		return nil, err
	}
	c := &call{stop: stop, logs: limitio.NewLines(limitio.DefaultLogBytes), mounts: ms}
	ms.denials.Reset(c.logs.Add)
	c.stdout = limitio.NewWriter(p.limits.MaxOutputBytes, func() { stop(errOutputLimit) })
	c.memory = &memoryCap{limit: p.limits.MemoryBytes, tooSmall: func() { stop(errMemoryLimit) }}
	return c, nil
}

// moduleConfig is the call's module config: the shared base plus this
// call's stdio, file systems and sleep.
func (p *prepared) moduleConfig(ctx context.Context, c *call, input []byte) wazero.ModuleConfig {
	cfg := p.base.
		WithStdin(bytes.NewReader(input)).
		WithStdout(c.stdout).
		WithStderr(c.logs).
		WithFSConfig(c.mounts.fsc)
	if p.limits.Deterministic {
		// A fixed clock (advancing per reading and by each sleep, without
		// waiting) and seeded randomness, fresh per call, so a call
		// replays exactly, fuel included.
		return meter.DeterministicConfig(cfg, 0)
	}
	cfg = cfg.WithNanosleep(sleeper(ctx))
	if c.rec != nil {
		cfg = c.rec.config(cfg)
	}
	return cfg
}

// close releases the call's mounts (removing its /tmp). The mount set
// goes back to the pool with release, once the result has been read.
func (c *call) close() error {
	var errs []error
	for _, fs := range c.mounts.fss {
		errs = append(errs, fs.Close())
	}
	return errors.Join(errs...)
}

// release returns the call's mount set to the pool.
func (p *prepared) release(c *call) {
	c.mounts.denials.Reset(nil)
	p.mountPool.Put(c.mounts)
}

// Run implements runner.Prepared.
func (p *prepared) Run(ctx context.Context, req runner.Request) (runner.Result, error) {
	if p.r.isClosed() {
		return runner.Result{}, fmt.Errorf("wasm run %s: runner closed", p.toolID)
	}
	if req.Replay != nil {
		return p.replayRun(ctx, req)
	}
	if sp := p.slots(); sp != nil {
		// The fast path on a pooled instance (reuse.go, park.go);
		// without a ready one, the call gets a fresh instance below
		// (from the snapshot, or a command's from _start).
		if res, ok, err := p.runReused(ctx, sp, req); ok {
			return res, err
		}
	}
	ctx, stop, release := callContext(ctx, p.limits.Timeout)
	defer release()
	c, err := p.newCall(stop)
	if err != nil {
		return runner.Result{}, fmt.Errorf("wasm run %s: %w", p.toolID, err)
	}
	defer p.release(c)
	c.rec = p.callRecorder()
	ctx = experimental.WithMemoryAllocator(ctx, p.allocator(c))
	ctx = c.withBudget(ctx, p.limits.Fuel)

	mod, runErr := p.instantiate(ctx, p.moduleConfig(ctx, c, req.Input))
	if runErr == nil {
		runErr = p.start(ctx, mod)
	}
	// Read why the call was stopped (nil if it was not) before cleanup
	// time can count against the deadline.
	stopped := context.Cause(ctx)
	if mod != nil {
		p.closeModule(mod)
	}
	if err := c.close(); err != nil {
		p.logger.Warn("cleanup after call", "error", err)
	}
	res, err := p.result(c, runErr, stopped)
	if err != nil {
		return runner.Result{}, fmt.Errorf("wasm run %s: %w", p.toolID, err)
	}
	res.Recorded = p.recordedFresh(c.rec)
	if req.Logger != nil && res.Err != nil {
		req.Logger.Debug("wasm call failed", "code", res.Err.Code, "denied", c.mounts.denials.Count())
	}
	return res, nil
}

// instantiate makes a fresh instance of the module; no guest code runs
// yet beyond data and element initialisation.
func (p *prepared) instantiate(ctx context.Context, cfg wazero.ModuleConfig) (api.Module, error) {
	if p.fast != nil {
		return p.fast.instantiate(ctx, p, cfg)
	}
	return p.rt.InstantiateModule(ctx, p.compiled, cfg)
}

// start runs the command's _start.
func (p *prepared) start(ctx context.Context, mod api.Module) error {
	if p.fast != nil {
		return p.fast.call(ctx, mod)
	}
	fn := mod.ExportedFunction("_start")
	if fn == nil {
		return errors.New("module exports no _start")
	}
	_, err := fn.Call(ctx)
	return err
}

// closeModule releases an instance. Closing never depends on the call's
// context, which may be done.
func (p *prepared) closeModule(mod api.Module) {
	_ = mod.Close(context.Background())
}

// Interface guards
var _ runner.Prepared = (*prepared)(nil)

// Interface guard
var _ runner.Closer = (*prepared)(nil)

// PoolStats implements runner.Statser for tools with a pool of ready
// instances (zero for the others).
func (p *prepared) PoolStats() runner.PoolStats {
	if sp := p.slots(); sp != nil {
		h, m, d := sp.stats()
		sp.mu.Lock()
		live := sp.live
		sp.mu.Unlock()
		return runner.PoolStats{Hits: h, Misses: m, Discards: d, Waits: sp.waits.Load(), Ready: len(sp.ready), Instances: live}
	}
	if p.fast == nil {
		return runner.PoolStats{}
	}
	if mp, ok := p.fast.pool.(*memoryPool); ok {
		h, m := mp.stats()
		return runner.PoolStats{Hits: h, Misses: m}
	}
	return runner.PoolStats{}
}

// slots is the tool's pool of reused instances, or nil.
func (p *prepared) slots() *slotPool {
	switch {
	case p.command != nil:
		return p.command.slots
	case p.fast != nil:
		return p.fast.slots
	}
	return nil
}
