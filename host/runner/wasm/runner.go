package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/internal/filecache"
	"github.com/agenthost/agenthost/host/internal/meter"
	"github.com/agenthost/agenthost/host/internal/sandboxfs"
	"github.com/agenthost/agenthost/host/internal/wasiguard"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
)

// Defaults for a zero limit in a grant (the default policy).
const (
	DefaultTimeout        = 10 * time.Second
	DefaultMemoryBytes    = 256 << 20
	DefaultMaxOutputBytes = 1 << 20
)

// Options configures a Runner. The zero value is valid.
type Options struct {
	// Logger receives diagnostics; nil means silent.
	Logger hclog.Logger
	// CacheDir is wazero's on-disk compilation cache folder, so a second
	// process does not recompile; "" keeps compiled code in memory only.
	CacheDir string
	// PoolMemoryBytes is the memory budget of all fast-path pools
	// together (policy pool.memoryMb, docs/POOLS.md); 0 keeps no ready
	// memories, so each fast-path call copies its snapshot on the spot.
	PoolMemoryBytes uint64
	// NoTiering compiles every module with the optimizing compiler before
	// its first call. By default a module whose compiled code is not at
	// hand (in memory or in CacheDir) first runs on wazero's interpreter
	// while the compiler works in the background (tier.go). The
	// environment variable AGENTHOST_WASM_TIERING=off does the same.
	NoTiering bool
	// forceTiering tiers whatever NoTiering, the environment and the
	// package default say (tests).
	forceTiering bool
}

// Runner compiles and runs wasi-command tools. It is safe for concurrent
// use. Close it to release the runtime.
type Runner struct {
	logger hclog.Logger
	rt     wazero.Runtime
	cache  wazero.CompilationCache
	meter  *meter.Cache // instrumented modules (interrupt.go)
	// reactors are the rewritten reactor modules (reactorcache.go).
	reactors *reactorCache
	// snapshots stores start-up snapshots on disk (snapshotcache.go);
	// nil without a cache folder.
	snapshots *snapshotCache
	// compiledFiles checks wazero's compiled files on disk.
	compiledFiles *filecache.Compiled
	startups      atomic.Int64 // start-ups run for a snapshot (for tests)
	// writes stops the caches' writes at Close: a preparation can end
	// after it, and the cache folder must then be left alone.
	writes *filecache.Gate
	pools  *pools // fast-path memory pools and their budget

	mu       sync.Mutex
	compiled map[string]*compileEntry // by module SHA-256
	closed   bool
	// compiling counts compilations in progress: the runtime and cache
	// are released once the last one has ended (wazero must not close a
	// cache a compilation is using).
	compiling int
	release   sync.Once
	// tier is the interpreter tier (tier.go).
	tier tierState
}

// compileEntry is one module compiled once, shared by every tool using it.
type compileEntry struct {
	once sync.Once
	mod  wazero.CompiledModule
	err  error
	done atomic.Bool // once has run: mod and err are set
}

// New returns a Runner with its own wazero runtime.
func New(ctx context.Context, opts Options) (*Runner, error) {
	logger := opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	cfg := interruptConfig(wazero.NewRuntimeConfigCompiler())
	var cache wazero.CompilationCache
	if opts.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm runner: compilation cache %s: %w", opts.CacheDir, err)
		}
		cache = c
		cfg = cfg.WithCompilationCache(c)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasiguard.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("wasm runner: instantiate wasi: %w", err)
	}
	if err := meter.NewHostModule(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("wasm runner: %w", err)
	}
	if err := newToolModule(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("wasm runner: %w", err)
	}
	meterDir, reactorDir := "", ""
	if opts.CacheDir != "" {
		meterDir = filepath.Join(opts.CacheDir, "meter")
		reactorDir = filepath.Join(opts.CacheDir, "reactor")
	}
	writes := &filecache.Gate{}
	mc := meter.NewCache(meterDir, writes)
	named := logger.Named("runner.wasm")
	mc.Discarded = func(path, reason string) {
		named.Warn("discarded a cached instrumented module; rebuilding it", "file", filepath.Base(path), "reason", reason)
	}
	var snapshots *snapshotCache
	var compiledFiles *filecache.Compiled
	if opts.CacheDir != "" {
		snapshots = newSnapshotCache(filepath.Join(opts.CacheDir, "snapshot"), writes, func(path, reason string) {
			named.Warn("discarded a cached start-up snapshot; starting the tool afresh", "file", filepath.Base(path), "reason", reason)
		})
		var err error
		compiledFiles, err = filecache.NewCompiled(opts.CacheDir, writes, func(path, reason string) {
			named.Warn("discarded a cached compiled module; compiling it again", "file", filepath.Base(path), "reason", reason)
		}, func(path string) {
			named.Warn("a compiled module is not where its name says: compiled code on disk is not checked", "file", path)
		})
		if err != nil {
			_ = rt.Close(ctx)
			return nil, fmt.Errorf("wasm runner: compilation cache %s: %w", opts.CacheDir, err)
		}
	}
	return &Runner{
		logger: named,
		rt:     rt,
		cache:  cache,
		meter:  mc,
		reactors: newReactorCache(reactorDir, writes, func(path, reason string) {
			named.Warn("discarded a cached reactor module; rebuilding it", "file", filepath.Base(path), "reason", reason)
		}),
		snapshots:     snapshots,
		compiledFiles: compiledFiles,
		writes:        writes,
		pools:         newPools(opts.PoolMemoryBytes),
		compiled:      map[string]*compileEntry{},
		tier: tierState{
			on:       tieringOn(opts, tieringDefault),
			compiled: map[string]*compileEntry{},
		},
	}, nil
}

// Close releases the runtime, every compiled module and the compilation
// cache handle. Prepared tools of a closed Runner fail with a Go error.
// A compilation in progress is not waited for: the runtime is released
// when it ends, and its module is dropped.
func (r *Runner) Close(ctx context.Context) error {
	r.writes.Close()
	r.mu.Lock()
	r.closed = true
	r.compiled = map[string]*compileEntry{}
	r.tier.compiled = map[string]*compileEntry{}
	busy := r.compiling > 0
	r.mu.Unlock()
	r.pools.closeAll()
	if busy {
		return nil
	}
	return r.releaseRuntime(ctx)
}

// releaseRuntime closes the runtime and the compilation cache, once.
func (r *Runner) releaseRuntime(ctx context.Context) error {
	var err error
	r.release.Do(func() {
		err = r.rt.Close(ctx)
		if r.tier.rt != nil {
			err = errors.Join(err, r.tier.rt.Close(ctx))
		}
		if r.cache != nil {
			err = errors.Join(err, r.cache.Close(ctx))
		}
	})
	if err != nil {
		return fmt.Errorf("wasm runner: close: %w", err)
	}
	return nil
}

func (r *Runner) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Prepare implements runner.Runner: it checks that tool is a wasi-command
// module whose path stays in its folder, that its digest matches, that
// the grant is one this runner can enforce, and compiles the module (once
// per distinct module). Errors carry LOAD_ERROR (PERMISSION_DENIED for a
// denied grant). Unless tiering is off, a module not compiled yet runs
// on the interpreter until its compiled code is ready (tier.go).
func (r *Runner) Prepare(ctx context.Context, tool *manifest.Tool, grant *policy.Grant) (runner.Prepared, error) {
	p, err := r.prepare(ctx, tool, grant, prepOpts{})
	if err != nil {
		return nil, err
	}
	if p.interp {
		return r.tierUp(tool, grant, p), nil
	}
	return p, nil
}

// prepare is Prepare on the tier o asks for.
func (r *Runner) prepare(ctx context.Context, tool *manifest.Tool, grant *policy.Grant, o prepOpts) (*prepared, error) {
	if tool == nil || grant == nil {
		return nil, errors.New("wasm prepare: nil tool or grant")
	}
	fail := func(code abi.Code, format string, args ...any) error {
		return fmt.Errorf("wasm prepare %s: %w", tool.ToolID, abi.Errorf(code, format, args...))
	}
	if grant.Denied {
		return nil, fail(abi.CodePermissionDenied, "the policy denies tool %s", tool.ToolID)
	}
	h := tool.Handler
	if h.Type != manifest.HandlerWasm {
		return nil, fail(abi.CodeLoadError, "handler type %q is not %q", h.Type, manifest.HandlerWasm)
	}
	if h.ABI != "" && h.ABI != manifest.ABIWasiCommand {
		return nil, fail(abi.CodeLoadError, "handler abi %q is not %q", h.ABI, manifest.ABIWasiCommand)
	}
	if h.EntryPoint != "" && h.EntryPoint != "_start" {
		return nil, fail(abi.CodeLoadError, "a wasi-command module starts at _start; entryPoint %q is not supported", h.EntryPoint)
	}
	mounts, err := mountPlan(tool, grant)
	if err != nil {
		return nil, fail(abi.CodeLoadError, "%v", err)
	}
	// The fast path: a reactor pre-initialised once (snapshot.go),
	// instrumented and rewritten once (reactorcache.go).
	reactor := func(rm *reactorModule) (*prepared, error) {
		p, err := r.prepareReactor(ctx, tool, grant, mounts, rm, o)
		if err != nil && !o.compiled && r.tier.on {
			// A large module's start-up can outrun the call's time limit on
			// the interpreter while it fits on compiled code: the
			// interpreter tier is an optimisation, never a reason to fail.
			co := o
			co.compiled = true
			p, err = r.prepareReactor(ctx, tool, grant, mounts, rm, co)
		}
		if err != nil {
			return nil, fail(abi.CodeLoadError, "pre-initialise %s: %v", h.Module, err)
		}
		return p, nil
	}
	if loaded := tool.Digest(); loaded != "" && (h.SHA256 == "" || strings.EqualFold(h.SHA256, loaded)) {
		// The loader hashed the module (and checked it against the pin)
		// when the manifest loaded. A rewrite cached under that digest is
		// of exactly those bytes, so the module need not be read and
		// hashed again: about 5 ms of a process's first call for a Go
		// tool of a few MiB.
		if rm := r.reactors.cached(loaded); rm != nil {
			return reactor(rm)
		}
	}
	code, sum, err := readModule(tool)
	if err != nil {
		return nil, fail(abi.CodeLoadError, "%v", err)
	}
	if h.SHA256 != "" && !strings.EqualFold(h.SHA256, sum) {
		return nil, fail(abi.CodeLoadError, "module %s has sha256 %s, manifest says %s", h.Module, sum, h.SHA256)
	}
	// The bytes read are the ones compiled: checked against what load
	// saw (and, under requireSignature, the signed index) even when the
	// manifest pins no digest.
	if loaded := tool.Digest(); loaded != "" && !strings.EqualFold(loaded, sum) {
		return nil, fail(abi.CodeLoadError, "module %s changed since load (sha256 %s, loaded %s)", h.Module, sum, loaded)
	}
	if err := r.checkImports(code); err != nil {
		return nil, fail(abi.CodeLoadError, "%s: %v", h.Module, err)
	}
	if isReactor(code) {
		rm, err := r.reactors.rewrite(sum, func() ([]byte, error) {
			metered, _, err := r.instrument(code, sum)
			if err != nil {
				return nil, fmt.Errorf("instrument: %w", err)
			}
			return metered, nil
		})
		if err != nil {
			return nil, fail(abi.CodeLoadError, "pre-initialise %s: %v", h.Module, err)
		}
		return reactor(rm)
	}
	if p, err := r.prepareCommand(ctx, tool, grant, mounts, sum, code, o); err != nil || p != nil {
		return p, err
	}
	// Every tool runs instrumented: the meter is how a call is stopped at
	// its deadline, and counts fuel (interrupt.go).
	if code, sum, err = r.instrument(code, sum); err != nil {
		return nil, fail(abi.CodeLoadError, "instrument %s: %v", h.Module, err)
	}
	mod, rt, interp, err := r.compileTier(ctx, o, sum, code)
	if err != nil {
		return nil, fail(abi.CodeLoadError, "compile %s: %v", h.Module, err)
	}
	if _, ok := mod.ExportedFunctions()["_start"]; !ok {
		return nil, fail(abi.CodeLoadError, "module %s exports no _start: not a wasi-command", h.Module)
	}
	p, err := r.newPrepared(tool, grant, mounts, mod, rt)
	if err != nil {
		return nil, fail(abi.CodeLoadError, "%v", err)
	}
	p.interp = interp
	return p, nil
}

// readModule reads the tool's module, refusing a path that leaves the
// tool's folder (also through a symlink), and returns it with its hex
// SHA-256.
func readModule(tool *manifest.Tool) ([]byte, string, error) {
	rel := tool.Handler.Module
	if rel == "" {
		return nil, "", errors.New("handler.module is empty")
	}
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return nil, "", fmt.Errorf("module %q leaves the tool folder", rel)
	}
	root, err := os.OpenRoot(tool.Dir)
	if err != nil {
		return nil, "", fmt.Errorf("open tool folder: %w", err)
	}
	defer root.Close()
	code, err := root.ReadFile(filepath.FromSlash(rel))
	if err != nil {
		return nil, "", fmt.Errorf("read module: %w", err)
	}
	sum := sha256.Sum256(code)
	return code, hex.EncodeToString(sum[:]), nil
}

// compile returns the compiled module for sum, compiling it once.
func (r *Runner) compile(ctx context.Context, sum string, code []byte) (wazero.CompiledModule, error) {
	return r.compileOn(ctx, false, sum, code)
}

// mount is one guest mount of the plan; its FS is made per call.
type mount struct {
	cfg sandboxfs.Config // without Checker and Denials
}

// mountPlan returns the mounts of every call of tool under grant.
func mountPlan(tool *manifest.Tool, grant *policy.Grant) ([]mount, error) {
	plan, err := sandboxfs.Plan(tool.Dir, grant)
	if err != nil {
		return nil, err
	}
	out := make([]mount, len(plan))
	for i, c := range plan {
		out[i] = mount{c}
	}
	return out, nil
}

// Interface guards
var (
	_ runner.Runner     = (*Runner)(nil)
	_ sandboxfs.Checker = (*policy.Grant)(nil)
)
