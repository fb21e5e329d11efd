package wasm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/agenthost/agenthost/host/internal/meter"
	"github.com/agenthost/agenthost/host/internal/wasiguard"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
)

// Tiering (docs/POOLS.md, "Tiers: the interpreter first"). wazero's
// optimizing compiler takes about a second of CPU for a Go module of a
// few MiB; its interpreter compiles the same module in a fraction of
// that. A tool whose compiled module is not at hand (not compiled in this
// process, not in the on-disk cache) is prepared on the interpreter and
// its calls run there, as fresh instances, while the compiler builds the
// native code in the background; once it is built (and written to the
// cache), the tool is prepared again on it (with the snapshot the
// interpreter tier took) and later calls use the compiled tier and its
// pool. Both tiers run the same instrumented module, so fuel, deadlines
// and every limit behave alike.

// EnvTiering names the environment variable that turns tiering off for a
// runner whose Options leave it on: "off" (or "0", "false").
const EnvTiering = "AGENTHOST_WASM_TIERING"

// tieringFromEnv reports whether the environment leaves tiering on.
func tieringFromEnv() bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(EnvTiering))) {
	case "off", "0", "false", "no":
		return false
	}
	return true
}

// tieringOn reports whether a runner with opts tiers, def being the
// default when neither opts nor the environment turn it off.
func tieringOn(opts Options, def bool) bool {
	return (opts.forceTiering || !opts.NoTiering && def && tieringFromEnv()) && tieringSupported()
}

// tieringSupported reports whether wazero has a compiler here: elsewhere
// its "compiler" runtime is the interpreter, and there is nothing to tier.
func tieringSupported() bool {
	return (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") && (runtime.GOOS == "linux" || runtime.GOOS == "darwin" || runtime.GOOS == "windows" || runtime.GOOS == "freebsd")
}

// prepOpts says how a preparation compiles.
type prepOpts struct {
	// compiled forces the compiled tier (the background upgrade, or
	// tiering off); otherwise a module that is not at hand compiles for
	// the interpreter.
	compiled bool
	// snap is the interpreter tier's snapshot, reused by the upgrade of
	// a reactor: the start-up does not run twice.
	snap *fastPath
}

// tierState is the runner's interpreter runtime and its compiled
// modules, made on first use, and the upgrades in flight.
type tierState struct {
	on       bool
	once     sync.Once
	rt       wazero.Runtime
	err      error
	compiled map[string]*compileEntry // guarded by Runner.mu
	// refs counts the tools prepared on each interpreter module (by its
	// key in compiled) that have not retired from it; guarded by
	// Runner.mu.
	refs map[string]int
	// hold, when set (tests only), delays every upgrade until closed.
	hold chan struct{}
	// afterCalls, afterRun and after replace tierAfterCalls,
	// tierAfterRun and tierAfter when set (tests only).
	afterCalls int64
	afterRun   time.Duration
	after      time.Duration
}

// triggers returns when a tool on the interpreter starts its compile.
func (t *tierState) triggers() (calls int64, run, age time.Duration) {
	calls, run, age = tierAfterCalls, tierAfterRun, tierAfter
	if t.afterCalls > 0 {
		calls = t.afterCalls
	}
	if t.afterRun > 0 {
		run = t.afterRun
	}
	if t.after > 0 {
		age = t.after
	}
	return calls, run, age
}

// tieringDefault is whether a runner tiers when its Options and the
// environment do not say (the package's own tests of the compiled tier
// turn it off).
var tieringDefault = true

// interpreter returns the runner's interpreter runtime, with the same
// host modules as the compiler's.
func (r *Runner) interpreter() (wazero.Runtime, error) {
	t := &r.tier
	t.once.Do(func() {
		ctx := context.Background()
		rt := wazero.NewRuntimeWithConfig(ctx, interruptConfig(wazero.NewRuntimeConfigInterpreter()))
		if _, err := wasiguard.Instantiate(ctx, rt); err != nil {
			_ = rt.Close(ctx)
			t.err = fmt.Errorf("instantiate wasi: %w", err)
			return
		}
		if err := meter.NewHostModule(ctx, rt); err != nil {
			_ = rt.Close(ctx)
			t.err = err
			return
		}
		if err := newToolModule(ctx, rt); err != nil {
			_ = rt.Close(ctx)
			t.err = err
			return
		}
		t.rt = rt
	})
	return t.rt, t.err
}

// compiledAtHand reports whether the compiled module of code (key its
// entry in r.compiled) needs no compilation: compiled in this process,
// or its compiled file is in the on-disk cache (read in tens of
// milliseconds). A compile in progress is not at hand.
func (r *Runner) compiledAtHand(key string, code []byte) bool {
	r.mu.Lock()
	e := r.compiled[key]
	r.mu.Unlock()
	if e != nil && e.done.Load() && e.err == nil {
		return true
	}
	if r.compiledFiles != nil {
		if fi, err := os.Stat(r.compiledFiles.Path(code)); err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	return false
}

// compileTier compiles code for the tier o asks for: the compiler's when
// o forces it, tiering is off or the compiled module is at hand, else
// the interpreter's (interp true).
func (r *Runner) compileTier(ctx context.Context, o prepOpts, key string, code []byte) (mod wazero.CompiledModule, rt wazero.Runtime, interp bool, err error) {
	if o.compiled || !r.tier.on || r.compiledAtHand(key, code) {
		mod, err = r.compile(ctx, key, code)
		return mod, r.rt, false, err
	}
	mod, err = r.compileOn(ctx, true, key, code)
	return mod, r.tier.rt, true, err
}

// compileInterp compiles code for the interpreter. It takes no compile
// slot: it is short, and must not wait behind background compiles.
func (r *Runner) compileInterp(ctx context.Context, code []byte) (wazero.CompiledModule, error) {
	rt, err := r.interpreter()
	if err != nil {
		return nil, err
	}
	return rt.CompileModule(ctx, code)
}

// When a tool on the interpreter starts its compile (docs/POOLS.md,
// "Tiers: the interpreter first"). Compiling a Go tool takes about a
// second of CPU; a short command (the CLI's exec, run, audit) would
// spend it on code it exits before using, on the core its own work
// needs. So the compile starts once the tool shows it will be used:
// tierAfterCalls calls, tierAfterRun of its calls' time on the
// interpreter, tierAfter since it was prepared, or a Warm (a server
// warming its catalogue), whichever comes first.
const (
	tierAfterCalls = 3
	tierAfterRun   = 250 * time.Millisecond
	tierAfter      = 10 * time.Second
)

// releaseInterp is called when a tool stops using mod, its interpreter
// module: its calls moved to the compiled tier, or it was closed. When
// no tool uses the module any more it is closed, which frees its
// interpreter code (a few hundred MiB for a Go tool of a few MiB): a
// long-lived host keeps only its compiled tools. A module prepared but
// never retired (a failed preparation) stays until the runner closes.
func (r *Runner) releaseInterp(mod wazero.CompiledModule) {
	var drop wazero.CompiledModule
	r.mu.Lock()
	for key, e := range r.tier.compiled {
		if !e.done.Load() || e.mod != mod {
			continue
		}
		if r.tier.refs[key]--; r.tier.refs[key] <= 0 {
			delete(r.tier.refs, key)
			delete(r.tier.compiled, key)
			drop = mod
		}
		break
	}
	r.mu.Unlock()
	if drop != nil {
		_ = drop.Close(context.Background())
	}
}

// tiered is a tool prepared on the interpreter whose compiled tier is
// built once it is wanted (start): calls run on first until next is set.
type tiered struct {
	r     *Runner
	tool  *manifest.Tool
	grant *policy.Grant
	first *prepared
	next  atomic.Pointer[prepared]
	// done is closed when the upgrade has ended, set or failed.
	done chan struct{}
	// startOnce starts the upgrade; timer starts it tierAfter after
	// preparation.
	startOnce sync.Once
	started   atomic.Bool
	timer     *time.Timer
	// calls and ran are the calls made on the interpreter and their time.
	calls atomic.Int64
	ran   atomic.Int64

	mu     sync.Mutex
	closed bool
	// running is the calls on first now; retired is set once first's
	// module is released (releaseInterp), when no call runs on it and
	// none will: the compiled tier is set or the tool is closed.
	running int
	retired bool
}

// retireLocked reports whether first's module is to be released now,
// and marks it released; t.mu is held.
func (t *tiered) retireLocked() bool {
	if t.retired || t.running > 0 || (t.next.Load() == nil && !t.closed) {
		return false
	}
	t.retired = true
	return true
}

// tierUp returns first (an interpreter tier) wrapped; its compiled tier
// is prepared in the background once it is wanted (start). Close does
// not wait for it (docs/RATIONALE.md, "Why not wait for the compile at
// Close?"): the runtime is released when it ends.
func (r *Runner) tierUp(tool *manifest.Tool, grant *policy.Grant, first *prepared) runner.Prepared {
	t := &tiered{r: r, tool: tool, grant: grant, first: first, done: make(chan struct{})}
	_, _, age := r.tier.triggers()
	t.timer = time.AfterFunc(age, t.start)
	return t
}

// start begins the compiled tier's preparation, once; after Close it
// does nothing but end the wait of Warm.
func (t *tiered) start() {
	t.startOnce.Do(func() {
		t.timer.Stop()
		t.mu.Lock()
		closed := t.closed
		t.mu.Unlock()
		if closed {
			close(t.done)
			return
		}
		t.started.Store(true)
		go t.upgrade()
	})
}

// upgrade prepares the compiled tier and switches calls to it.
func (t *tiered) upgrade() {
	r, first := t.r, t.first
	defer close(t.done)
	if r.tier.hold != nil {
		<-r.tier.hold
	}
	p, err := r.prepare(context.Background(), t.tool, t.grant, prepOpts{compiled: true, snap: first.fast})
	if err != nil {
		if !r.isClosed() {
			first.logger.Warn("compiling the tool failed; its calls stay on the interpreter", "error", err)
		}
		return
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		_ = p.Close()
		return
	}
	t.next.Store(p)
	retire := t.retireLocked()
	t.mu.Unlock()
	if retire {
		r.releaseInterp(first.compiled)
	}
	first.logger.Debug("tool switched to its compiled module")
}

// current is the tier calls run on now.
func (t *tiered) current() *prepared {
	if p := t.next.Load(); p != nil {
		return p
	}
	return t.first
}

// Run implements runner.Prepared on the current tier. A call on the
// interpreter counts towards starting the compile.
func (t *tiered) Run(ctx context.Context, req runner.Request) (runner.Result, error) {
	if p := t.next.Load(); p != nil {
		return p.Run(ctx, req)
	}
	t.mu.Lock()
	if p := t.next.Load(); p != nil {
		t.mu.Unlock()
		return p.Run(ctx, req)
	}
	t.running++
	t.mu.Unlock()
	began := time.Now()
	res, err := t.first.Run(ctx, req)
	t.mu.Lock()
	t.running--
	retire := t.retireLocked()
	t.mu.Unlock()
	if retire {
		t.r.releaseInterp(t.first.compiled)
	}
	ran := t.ran.Add(int64(time.Since(began)))
	calls, run, _ := t.r.tier.triggers()
	if t.calls.Add(1) >= calls || time.Duration(ran) >= run {
		t.start()
	}
	return res, err
}

// Close implements runner.Closer: it releases both tiers (an upgrade
// that ends later is released at once).
func (t *tiered) Close() error {
	t.mu.Lock()
	t.closed = true
	retire := t.retireLocked()
	t.mu.Unlock()
	if retire {
		t.r.releaseInterp(t.first.compiled)
	}
	t.timer.Stop()
	err := t.first.Close()
	if p := t.next.Load(); p != nil {
		err = errors.Join(err, p.Close())
	}
	return err
}

// Interpreted reports whether the tool's calls run on the interpreter
// (its compiled tier not built yet).
func (t *tiered) Interpreted() bool { return t.next.Load() == nil }

// CallsTools reports whether the tool's module imports
// agenthost_tools.call (the same module on both tiers).
func (t *tiered) CallsTools() bool { return t.first.CallsTools() }

// PoolStats implements runner.Statser (zero on the interpreter tier).
func (t *tiered) PoolStats() runner.PoolStats { return t.current().PoolStats() }

// Warm starts the compiled tier, waits for it (or ctx) and reports its
// pool: a server warming its catalogue is ready once its tools run
// compiled. Calls do not wait for it: they run on the interpreter
// meanwhile. If the compile failed, the tool stays on the interpreter:
// WarmNone.
func (t *tiered) Warm(ctx context.Context) WarmState {
	t.start()
	select {
	case <-t.done:
	case <-ctx.Done():
	}
	return t.current().Warm(ctx)
}

// Interface guards
var (
	_ runner.Prepared = (*tiered)(nil)
	_ runner.Closer   = (*tiered)(nil)
	_ runner.Statser  = (*tiered)(nil)
)
