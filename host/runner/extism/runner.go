package extism

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/internal/filecache"
	"github.com/agenthost/agenthost/host/internal/meter"
	"github.com/agenthost/agenthost/host/internal/netguard"
	"github.com/agenthost/agenthost/host/internal/sandboxfs"
	"github.com/agenthost/agenthost/host/internal/wasiguard"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// DefaultEntryPoint is the export called when handler.entryPoint is empty.
const DefaultEntryPoint = "call"

// MaxVarBytes caps the vars a plugin holds in one call, as go-sdk does.
const MaxVarBytes = 1 << 20

// Options configure a [Runner]. The zero value means: no logging, an
// in-memory compilation cache, HTTP responses capped at
// netguard.DefaultMaxResponseBytes and requests at netguard.DefaultTimeout
// (and always by the call's own timeout).
type Options struct {
	// Logger receives host-side diagnostics; nil means none.
	Logger hclog.Logger
	// CacheDir, when set, holds wazero's compilation cache on disk so a
	// second process does not recompile.
	CacheDir string
	// MaxHTTPResponseBytes caps one http_request response body.
	MaxHTTPResponseBytes int64
	// HTTPTimeout caps one http_request, redirects and body included.
	HTTPTimeout time.Duration
}

// Runner runs tools with handler.abi "extism". It owns one wazero runtime
// with the extism:host/env module and WASI; compiled modules are cached by
// their SHA-256 digest. Close releases it.
type Runner struct {
	opts  Options
	log   hclog.Logger
	cache wazero.CompilationCache
	meter *meter.Cache
	// writes stops the meter cache's writes at Close.
	writes *filecache.Gate
	// compiled checks wazero's compiled files on disk; nil without a
	// cache folder.
	compiled *filecache.Compiled
	rt       wazero.Runtime

	mu      sync.Mutex
	modules map[string]*module

	// Network seams for tests (export_test.go); nil means the defaults.
	resolver netguard.Resolver
	dial     netguard.DialFunc
}

// New returns a Runner. Call Close when done.
func New(ctx context.Context, opts Options) (*Runner, error) {
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if opts.MaxHTTPResponseBytes < 0 || opts.HTTPTimeout < 0 {
		return nil, fmt.Errorf("extism runner: negative HTTP cap")
	}
	var cache wazero.CompilationCache
	if opts.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("extism runner: compilation cache %s: %w", opts.CacheDir, err)
		}
		cache = c
	} else {
		cache = wazero.NewCompilationCache()
	}
	// No WithCloseOnContextDone: modules are instrumented by
	// host/internal/meter, whose refill import stops a guest at the
	// deadline far more cheaply (see docs/ABI.md, "## extism").
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache))
	if err := meter.NewHostModule(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("extism runner: %w", err)
	}
	if _, err := wasiguard.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("extism runner: instantiate wasi: %w", err)
	}
	if err := instantiateEnv(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("extism runner: %w", err)
	}
	writes := &filecache.Gate{}
	mc := meter.NewCache(opts.CacheDir, writes)
	named := log.Named("runner.extism")
	mc.Discarded = func(path, reason string) {
		named.Warn("discarded a cached instrumented module; rebuilding it", "file", filepath.Base(path), "reason", reason)
	}
	var compiled *filecache.Compiled
	if opts.CacheDir != "" {
		var err error
		compiled, err = filecache.NewCompiled(opts.CacheDir, writes, func(path, reason string) {
			named.Warn("discarded a cached compiled module; compiling it again", "file", filepath.Base(path), "reason", reason)
		}, func(path string) {
			named.Warn("a compiled module is not where its name says: compiled code on disk is not checked", "file", path)
		})
		if err != nil {
			rt.Close(ctx)
			return nil, fmt.Errorf("extism runner: compilation cache %s: %w", opts.CacheDir, err)
		}
	}
	return &Runner{
		opts:     opts,
		log:      named,
		cache:    cache,
		meter:    mc,
		writes:   writes,
		compiled: compiled,
		rt:       rt,
		modules:  make(map[string]*module),
	}, nil
}

// Close releases the runtime and every compiled module. Prepared tools
// must not be run afterwards.
func (r *Runner) Close(ctx context.Context) error {
	r.writes.Close()
	err := r.rt.Close(ctx)
	if cerr := r.cache.Close(ctx); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("extism runner close: %w", err)
	}
	return nil
}

// loadErr returns a LOAD_ERROR naming the tool.
func loadErr(tool *manifest.Tool, format string, args ...any) *abi.Error {
	return abi.Errorf(abi.CodeLoadError, "tool %s: %s", tool.ToolID, fmt.Sprintf(format, args...))
}

// Prepare instruments tool's module for fuel and interruption
// (host/internal/meter), compiles it (once per digest) and checks that the
// plugin can run here: every import is provided, the entry point exists
// and takes no parameters, and the tool asks for nothing this ABI does
// not enforce (file access).
func (r *Runner) Prepare(ctx context.Context, tool *manifest.Tool, grant *policy.Grant) (runner.Prepared, error) {
	if tool == nil || grant == nil {
		return nil, fmt.Errorf("extism prepare: nil tool or grant")
	}
	h := tool.Handler
	if h.Type != manifest.HandlerWasm || h.ABI != manifest.ABIExtism {
		return nil, loadErr(tool, "handler is %s/%s, not wasm/extism", h.Type, h.ABI)
	}
	plan, err := sandboxfs.Plan(tool.Dir, grant)
	if err != nil {
		return nil, loadErr(tool, "%s", err.Error())
	}
	path, err := modulePath(tool)
	if err != nil {
		return nil, loadErr(tool, "%s", err.Error())
	}
	code, err := os.ReadFile(path)
	if err != nil {
		return nil, loadErr(tool, "read module: %s", err.Error())
	}
	sum := sha256.Sum256(code)
	digest := hex.EncodeToString(sum[:])
	if h.SHA256 != "" && !strings.EqualFold(h.SHA256, digest) {
		return nil, loadErr(tool, "module %s has sha256 %s, manifest says %s", h.Module, digest, h.SHA256)
	}
	// Checked against what load saw (and, under requireSignature, the
	// signed index) even when the manifest pins no digest.
	if loaded := tool.Digest(); loaded != "" && !strings.EqualFold(loaded, digest) {
		return nil, loadErr(tool, "module %s changed since load (sha256 %s, loaded %s)", h.Module, digest, loaded)
	}
	mod, err := r.module(digest, code)
	if err != nil {
		return nil, loadErr(tool, "%s: %s", h.Module, err.Error())
	}
	// Default grants run from a pre-initialised snapshot when the module
	// allows it (snapshot.go); metered and deterministic calls run the
	// initialiser themselves, so their fuel and clocks are exactly those of
	// a fresh instance.
	var stripped *strippedModule
	if grant.Limits.Fuel == 0 && !grant.Limits.Deterministic && !grant.Denied {
		if stripped, err = r.stripped(ctx, mod); err != nil {
			r.log.Debug("no snapshot; each call runs the initialiser", "tool", tool.ToolID, "reason", err)
		}
	}
	var compiled wazero.CompiledModule
	if stripped != nil {
		compiled = stripped.compiled
	} else if compiled, err = r.plain(ctx, mod); err != nil {
		return nil, loadErr(tool, "%s: %s", h.Module, err.Error())
	}
	if err := checkImports(compiled); err != nil {
		return nil, loadErr(tool, "%s: %s", h.Module, err.Error())
	}
	entry := h.EntryPoint
	if entry == "" {
		entry = DefaultEntryPoint
	}
	def, ok := compiled.ExportedFunctions()[entry]
	if !ok {
		return nil, loadErr(tool, "module %s exports no function %q (handler.entryPoint)", h.Module, entry)
	}
	if len(def.ParamTypes()) != 0 || len(def.ResultTypes()) > 1 ||
		(len(def.ResultTypes()) == 1 && def.ResultTypes()[0] != api.ValueTypeI32) {
		return nil, loadErr(tool, "entry point %q must have type () -> i32 or () -> ()", entry)
	}
	config := make(map[string]string, len(grant.Config))
	for k, v := range grant.Config {
		config[k] = v
	}
	maxHTTP := r.opts.MaxHTTPResponseBytes
	if maxHTTP == 0 {
		maxHTTP = netguard.DefaultMaxResponseBytes
	}
	p := &prepared{
		r:       r,
		tool:    tool.ToolID,
		grant:   grant,
		mod:     mod,
		entry:   entry,
		inits:   initFuncs(compiled),
		config:  config,
		maxHTTP: maxHTTP,
		seed:    int64(binary.BigEndian.Uint64(sum[:8])),
		log:     r.log.With("tool", tool.ToolID),
		plan:    plan,
	}
	// Build the first mount set now: a mount that cannot be built is a
	// load error, not a failure of every call.
	set, err := sandboxfs.NewSet(grant, plan)
	if err != nil {
		return nil, loadErr(tool, "%s", err.Error())
	}
	p.mountPool.Put(set)
	if stripped != nil {
		if p.snap, err = p.takeSnapshot(ctx, stripped); err != nil {
			p.log.Debug("no snapshot; each call runs the initialiser", "reason", err)
		}
	}
	if p.snap == nil {
		if p.compiled, err = r.plain(ctx, mod); err != nil {
			return nil, loadErr(tool, "%s: %s", h.Module, err.Error())
		}
	}
	return p, nil
}

// modulePath returns the module's path, which must stay in the tool's
// folder.
func modulePath(tool *manifest.Tool) (string, error) {
	m := tool.Handler.Module
	if m == "" {
		return "", fmt.Errorf("handler.module is empty")
	}
	if filepath.IsAbs(m) {
		return "", fmt.Errorf("module %s is an absolute path", m)
	}
	p := filepath.Join(tool.Dir, filepath.FromSlash(m))
	rel, err := filepath.Rel(tool.Dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("module %s escapes the tool folder", m)
	}
	return p, nil
}

// module is one plugin module, by digest: its instrumented bytes and
// the variants compiled so far (each at most once per Runner).
type module struct {
	metered []byte
	// plain is the instrumented module as is (nil until needed).
	plain wazero.CompiledModule
	// stripped is the variant snapshots run (snapshot.go); strippedErr
	// says why there is none once tried.
	stripped    *strippedModule
	strippedErr error
}

// module instruments code (host/internal/meter adds fuel metering and
// cheap interruption) once per digest.
func (r *Runner) module(digest string, code []byte) (*module, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.modules[digest]; ok {
		return m, nil
	}
	metered, err := r.meter.Instrument(code)
	if err != nil {
		return nil, fmt.Errorf("instrument: %w", err)
	}
	m := &module{metered: metered}
	r.modules[digest] = m
	return m, nil
}

// plain returns m's instrumented module compiled, compiling it once.
func (r *Runner) plain(ctx context.Context, m *module) (wazero.CompiledModule, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m.plain == nil {
		var c wazero.CompiledModule
		err := r.compiled.Guard(m.metered, func() (err error) { c, err = r.rt.CompileModule(ctx, m.metered); return err })
		if err != nil {
			return nil, fmt.Errorf("compile: %w", err)
		}
		m.plain = c
	}
	return m.plain, nil
}

// stripped returns m's snapshot variant, building it once; the error
// says why the module has none.
func (r *Runner) stripped(ctx context.Context, m *module) (*strippedModule, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m.stripped == nil && m.strippedErr == nil {
		m.stripped, m.strippedErr = stripModule(ctx, r.rt, r.compiled, m.metered)
	}
	return m.stripped, m.strippedErr
}

// checkImports refuses imports this host does not provide, so a plugin
// that needs custom host functions fails at load with a clear message.
func checkImports(c wazero.CompiledModule) error {
	env := envSignatures()
	for _, d := range c.ImportedFunctions() {
		mod, name, _ := d.Import()
		switch mod {
		case wasi_snapshot_preview1.ModuleName, meter.ImportModule:
			continue
		case envModule:
			f, ok := env[name]
			if !ok {
				return fmt.Errorf("plugin imports %s.%s, which this host does not provide", mod, name)
			}
			if !sameTypes(f.params, d.ParamTypes()) || !sameTypes(f.results, d.ResultTypes()) {
				return fmt.Errorf("plugin imports %s.%s with a signature other than the kernel's", mod, name)
			}
		default:
			return fmt.Errorf("plugin imports host function %s.%s; only %s and WASI are provided", mod, name, envModule)
		}
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// initFuncs returns the runtime initialisers to call on each new instance,
// as go-sdk detects them: a Haskell plugin gets _initialize then
// hs_init(0, 0); a WASI reactor _initialize; a WASI command's
// __wasm_call_ctors when it exports no _initialize.
func initFuncs(c wazero.CompiledModule) []string {
	ex := c.ExportedFunctions()
	has := func(n string, params int) bool {
		d, ok := ex[n]
		return ok && len(d.ParamTypes()) == params
	}
	usesWASI := false
	for _, d := range c.ImportedFunctions() {
		if mod, _, _ := d.Import(); mod == wasi_snapshot_preview1.ModuleName {
			usesWASI = true
			break
		}
	}
	switch {
	case has("hs_init", 2):
		if has("_initialize", 0) {
			return []string{"_initialize", "hs_init"}
		}
		return []string{"hs_init"}
	case has("_initialize", 0):
		return []string{"_initialize"}
	case usesWASI && has("__wasm_call_ctors", 0):
		return []string{"__wasm_call_ctors"}
	}
	return nil
}

// Interface guards
var _ runner.Runner = (*Runner)(nil)
