package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host/cache"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/registry"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/extism"
	"github.com/agenthost/agenthost/host/runner/mcpclient"
	"github.com/agenthost/agenthost/host/runner/native"
	"github.com/agenthost/agenthost/host/runner/script"
	"github.com/agenthost/agenthost/host/runner/wasm"
)

// Host loads tools and runs calls. It is safe for concurrent use.
type Host struct {
	opts    Options
	log     hclog.Logger
	policy  *policy.Policy
	reg     *registry.Registry
	runners map[string]runner.Runner
	native  *native.Runner
	cat     catalogue
	health  health
	warming backgroundWarm // WarmInBackground (warm.go)
	closers []func(context.Context) error

	// life is cancelled by Close: preparations run under it (never under
	// a caller's context) and every call's context is tied to it.
	life     context.Context
	stopLife context.CancelCauseFunc

	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup // calls running
	prepared map[*manifest.Tool]*prepared

	// mcp runs the tools imported from the policy's MCP servers.
	mcp     *mcpclient.Runner
	mcpLock *mcpclient.Lock

	approvals approvals // the policy's approve rules and their broker (approve.go)
}

// New builds a host from opts and loads opts.Dirs. A toolpack folder that
// cannot be read is an error; a broken manifest inside one is not: it is
// reported by [Host.Failures] and calls to it give LOAD_ERROR.
func New(ctx context.Context, opts Options) (*Host, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	h := &Host{opts: opts, log: opts.Logger, policy: opts.Policy, reg: registry.New(), prepared: map[*manifest.Tool]*prepared{}}
	h.life, h.stopLife = context.WithCancelCause(context.Background())
	h.opts.Dirs = append([]string(nil), opts.Dirs...)
	if h.log == nil {
		h.log = hclog.NewNullLogger()
	}
	if h.policy == nil {
		h.policy = policy.Default()
	}
	if h.opts.LookupEnv == nil {
		h.opts.LookupEnv = os.LookupEnv
	}
	cacheDir, err := h.cacheDir()
	if err != nil {
		return nil, err
	}
	h.opts.CacheDir = cacheDir
	// Trimming walks the whole cache folder (milliseconds for a large
	// one): it runs beside the host's start, and Close waits for it.
	trimmed := make(chan struct{})
	go func() { defer close(trimmed); h.capCache() }()
	h.closers = append(h.closers, func(context.Context) error { <-trimmed; return nil })
	if h.policy.CacheDir != cacheDir { // per-tool $CACHE folders live under the host's cache too
		pc := *h.policy
		pc.CacheDir = cacheDir
		h.policy = &pc
	}
	if err := h.startRunners(ctx); err != nil {
		_ = h.Close(ctx)
		return nil, err
	}
	for _, t := range opts.Tools {
		if err := h.Register(t); err != nil {
			_ = h.Close(ctx)
			return nil, err
		}
	}
	for _, dir := range h.opts.Dirs {
		if err := h.Load(dir); err != nil {
			_ = h.Close(ctx)
			return nil, err
		}
	}
	if len(h.opts.Dirs) == 0 && h.mcp != nil {
		// Imported tools load with the catalogue, even without folders.
		h.cat.mu.Lock()
		ch, _ := h.rebuild(h.cat.dirs)
		h.cat.mu.Unlock()
		h.notify(ch)
	}
	return h, nil
}

// cacheDir resolves and checks the host's cache folder: Options.CacheDir,
// else the policy's cacheDir, else $XDG_CACHE_HOME/agenthost, else
// $HOME/.cache/agenthost; created 0700; refused when another user owns it
// or group or others may write it.
func (h *Host) cacheDir() (string, error) {
	explicit := h.opts.CacheDir
	if explicit == "" {
		explicit = h.policy.CacheDir
	}
	dir, err := cache.Resolve(explicit)
	if err != nil {
		return "", fmt.Errorf("host: %w", err)
	}
	if err := cache.Secure(dir); err != nil {
		return "", fmt.Errorf("host: %w", err)
	}
	return dir, nil
}

// Runner keys: handler.type, plus ":"+abi for wasm.
const (
	keyWasiCommand = manifest.HandlerWasm + ":" + manifest.ABIWasiCommand
	keyExtism      = manifest.HandlerWasm + ":" + manifest.ABIExtism
	keyScript      = manifest.HandlerScript
)

func runnerKey(t *manifest.Tool) string {
	if t.Handler.Type == manifest.HandlerWasm {
		return t.Handler.Type + ":" + t.Handler.ABI
	}
	return t.Handler.Type
}

// startRunners builds the runner set from a map keyed by handler type; no
// global registration.
func (h *Host) startRunners(ctx context.Context) error {
	// The WebAssembly runners start with their first tool (lazyrunner.go).
	wr := &lazyRunner{start: func(ctx context.Context) (runner.Runner, func(context.Context) error, error) {
		r, err := wasm.New(ctx, wasm.Options{Logger: h.log, CacheDir: filepath.Join(h.opts.CacheDir, "wazero"), PoolMemoryBytes: h.policy.PoolMemoryBytes()})
		if err != nil {
			return nil, nil, fmt.Errorf("host: %w", err)
		}
		return r, r.Close, nil
	}}
	h.closers = append(h.closers, wr.Close)
	er := &lazyRunner{start: func(ctx context.Context) (runner.Runner, func(context.Context) error, error) {
		r, err := extism.New(ctx, extism.Options{Logger: h.log, CacheDir: filepath.Join(h.opts.CacheDir, "wazero")})
		if err != nil {
			return nil, nil, fmt.Errorf("host: %w", err)
		}
		return r, r.Close, nil
	}}
	h.closers = append(h.closers, er.Close)
	sr, err := script.New(script.Options{Logger: h.log.Named("runner.script"), CacheDir: filepath.Join(h.opts.CacheDir, "scripts")})
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	h.closers = append(h.closers, sr.Close)
	h.native = native.New()
	h.runners = map[string]runner.Runner{keyWasiCommand: wr, keyExtism: er, keyScript: sr, manifest.HandlerServiceMethod: h.native,
		manifest.HandlerWorkflow: workflowRunner{h}}
	return h.startMCP(sr)
}

// Policy returns the policy the host applies.
func (h *Host) Policy() *policy.Policy { return h.policy }

// Grant returns the effective grant of the tool with the given ID.
func (h *Host) Grant(id string) (*policy.Grant, error) {
	t, err := h.reg.Lookup(id)
	if err != nil {
		return nil, err
	}
	return h.grant(t), nil
}
