package extism

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/internal/limitio"
	"github.com/agenthost/agenthost/host/internal/meter"
	"github.com/agenthost/agenthost/host/internal/netguard"
	"github.com/agenthost/agenthost/host/internal/sandboxfs"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
)

// prepared is one tool ready to run.
type prepared struct {
	r     *Runner
	tool  string
	grant *policy.Grant
	mod   *module
	// compiled is the plain instrumented module; nil when snap is set.
	compiled wazero.CompiledModule
	entry    string
	inits    []string
	config   map[string]string
	maxHTTP  int64
	seed     int64 // of the deterministic clock and randomness
	log      hclog.Logger
	// snap, when set, replaces instantiation with data segments plus the
	// initialiser by a restore of the initialised state (snapshot.go).
	snap *snapshot
	// plan is the WASI file system of every call (the same preopens as a
	// wasi-command tool under the same grant); mountPool holds idle
	// *sandboxfs.Set values built from it.
	plan      []sandboxfs.Config
	mountPool sync.Pool
}

// instance is the state of one call: a fresh plugin instance, its kernel
// memory, vars, logs and network guard. Host functions find it in the
// call's context.
type instance struct {
	p      *prepared
	budget *meter.Budget
	k      kernel
	config map[string]string
	vars   map[string][]byte
	logs   *limitio.Lines
	mem    *limitMemory
	guest  api.Memory

	mounts *sandboxfs.Set // the call's file systems

	guard       *netguard.Guard
	client      httpDoer
	httpStatus  int32
	httpHeaders map[string]string

	// hostErr is the first limit or refusal a host function hit.
	hostErr *abi.Error
	// outputOver is set when output_set named more than the output cap.
	outputOver uint64
}

// newInstance returns the state of a new call.
func (p *prepared) newInstance() *instance {
	in := &instance{
		p:      p,
		budget: &meter.Budget{Fuel: p.grant.Limits.Fuel},
		config: p.config,
		vars:   make(map[string][]byte),
		logs:   limitio.NewLines(0),
		mem:    &limitMemory{limit: p.grant.Limits.MemoryBytes},
	}
	in.k.reset()
	in.k.budget = in.kernelBudget
	return in
}

// acquireMounts gives the instance a mount set (pooled, reset) whose
// refusals go to its logs; releaseMounts closes its folders (removing its
// $TMP) and returns it to the pool.
func (p *prepared) acquireMounts(in *instance) error {
	set, ok := p.mountPool.Get().(*sandboxfs.Set)
	if ok {
		set.Reopen()
	} else {
		var err error
		if set, err = sandboxfs.NewSet(p.grant, p.plan); err != nil {
			return err
		}
	}
	set.Denials.Reset(in.logs.Add)
	in.mounts = set
	return nil
}

func (p *prepared) releaseMounts(in *instance) {
	if in.mounts == nil {
		return
	}
	in.mounts.Close()
	in.mounts.Denials.Reset(nil)
	p.mountPool.Put(in.mounts)
	in.mounts = nil
}

// kernelBudget charges kernel memory against the memory cap together with
// the plugin's linear memory.
func (in *instance) kernelBudget(live, n uint64) bool {
	limit := in.p.grant.Limits.MemoryBytes
	if limit == 0 {
		return true
	}
	used := live + n
	if in.guest != nil {
		used += uint64(in.guest.Size())
	}
	if used > limit {
		in.mem.exceeded = true
		return false
	}
	return true
}

// fail records e as the call's host-side failure and traps the plugin.
func (in *instance) fail(e *abi.Error) {
	if in.hostErr == nil {
		in.hostErr = e
	}
	panic(e)
}

// setOutput records the plugin's output_set.
func (in *instance) setOutput(off, n uint64) {
	if n > 0 {
		in.k.span(off, n) // traps on a bad range
	}
	in.k.outOff, in.k.outLen = off, n
	if max := in.p.grant.Limits.MaxOutputBytes; max > 0 && n > uint64(max) {
		in.outputOver = n
	}
}

// setVar implements var_set (a zero value offset deletes the var).
func (in *instance) setVar(nameOff, valOff uint64) {
	name := string(in.k.bytesAt(nameOff))
	in.k.free(nameOff)
	if valOff == 0 {
		delete(in.vars, name)
		return
	}
	val := in.k.bytesAt(valOff)
	in.k.free(valOff)
	size := len(name) + len(val)
	for k, v := range in.vars {
		if k != name {
			size += len(k) + len(v)
		}
	}
	if size > MaxVarBytes {
		panic(fmt.Errorf("var_set %q: vars would hold %d bytes, over the %d-byte cap", name, size, MaxVarBytes))
	}
	in.vars[name] = val
}

// log implements log_*: the message goes to the call's logs.
func (in *instance) log(level int32, off uint64) {
	msg := in.k.bytesAt(off)
	in.k.free(off)
	if level < minLogLevel {
		return
	}
	in.logs.Add("[" + levelNames[level] + "] " + string(msg))
}

// Run executes one call in a fresh instance.
func (p *prepared) Run(ctx context.Context, req runner.Request) (runner.Result, error) {
	if p.grant.Denied {
		return runner.Result{Logs: []string{}, Err: abi.Errorf(abi.CodePermissionDenied, "policy denies tool %s", p.tool)}, nil
	}
	if t := p.grant.Limits.Timeout; t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	in := p.newInstance()
	if err := p.acquireMounts(in); err != nil {
		return runner.Result{}, fmt.Errorf("extism %s: mounts: %w", p.tool, err)
	}
	defer p.releaseMounts(in)
	callCtx := in.context(ctx)
	compiled := p.compiled
	if p.snap != nil {
		compiled = p.snap.compiled
		in.mem.image = p.snap.memory
	}
	mod, err := p.r.rt.InstantiateModule(callCtx, compiled, p.moduleConfig(ctx, in))
	if err != nil {
		return p.result(ctx, in, nil, fmt.Errorf("instantiate: %w", err)), nil
	}
	defer mod.Close(context.Background())
	in.guest = mod.Memory()
	var res []uint64
	if p.snap != nil {
		res, err = p.callRestored(callCtx, in, mod, req.Input)
	} else {
		res, err = p.call(callCtx, in, mod, req.Input)
	}
	return p.result(ctx, in, res, err), nil
}

// callRestored restores the snapshot into mod and calls the entry point.
func (p *prepared) callRestored(ctx context.Context, in *instance, mod api.Module, input []byte) ([]uint64, error) {
	ok, err := p.snap.restore(mod)
	if err != nil {
		return nil, err
	}
	if !ok || in.mem.exceeded {
		in.mem.exceeded = true
		return nil, errKernelMemory{}
	}
	return p.invoke(ctx, in, mod.ExportedFunction(p.entry), input)
}

// context returns the context the guest runs under: ctx (with the call's
// deadline), the memory allocator, the meter's budget, and the instance
// outermost so host functions find it with one comparison.
func (in *instance) context(ctx context.Context) context.Context {
	ctx = experimental.WithMemoryAllocator(ctx, in.mem)
	ctx = meter.WithBudget(ctx, in.budget)
	return context.WithValue(ctx, instKey{}, in)
}

// call initialises the guest runtime, sets the input and calls the entry
// point.
func (p *prepared) call(ctx context.Context, in *instance, mod api.Module, input []byte) (res []uint64, err error) {
	if in.mem.exceeded {
		return nil, errKernelMemory{}
	}
	for _, name := range p.inits {
		var args []uint64
		if name == "hs_init" {
			args = []uint64{0, 0}
		}
		if _, err := mod.ExportedFunction(name).Call(ctx, args...); err != nil {
			return nil, fmt.Errorf("runtime init %s: %w", name, err)
		}
	}
	return p.invoke(ctx, in, mod.ExportedFunction(p.entry), input)
}

// invoke sets the input in fresh kernel memory and calls fn.
func (p *prepared) invoke(ctx context.Context, in *instance, fn api.Function, input []byte) (res []uint64, err error) {
	defer func() {
		if v := recover(); v != nil {
			if e, ok := v.(errKernelMemory); ok {
				err = e
				return
			}
			panic(v)
		}
	}()
	in.k.reset()
	in.k.setInput(input)
	return fn.Call(ctx)
}

// moduleConfig returns the WASI view of a call: the grant's file system
// (the same preopens as a wasi-command tool: /workspace, /tool, /cache,
// /tmp and mounts, checked file by file), no arguments, the granted
// environment variables, stdout and stderr into the logs, real clocks and
// randomness unless the grant asks for determinism, and a sleep that ends
// with the call's context.
func (p *prepared) moduleConfig(ctx context.Context, in *instance) wazero.ModuleConfig {
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions().
		WithStdin(bytes.NewReader(nil)).
		WithStdout(in.logs).
		WithStderr(in.logs)
	if in.mounts != nil {
		cfg = cfg.WithFSConfig(in.mounts.FSConfig)
	}
	if p.grant.Limits.Deterministic {
		cfg = meter.DeterministicConfig(cfg, p.seed)
	} else {
		cfg = cfg.WithSysWalltime().WithSysNanotime().WithRandSource(crand.Reader).
			WithNanosleep(meter.Nanosleep(ctx))
	}
	for k, v := range p.grant.Env {
		cfg = cfg.WithEnv(k, v)
	}
	return cfg
}

// result maps the outcome of a call to a runner.Result.
func (p *prepared) result(ctx context.Context, in *instance, res []uint64, err error) runner.Result {
	var exit *sys.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 0 && ctx.Err() == nil {
		err = nil
	}
	rc := uint32(0)
	if len(res) == 1 {
		rc = api.DecodeU32(res[0])
	}
	msg := ""
	if err == nil || in.k.errOff != 0 {
		msg = in.k.errorMessage()
	}
	failed := err != nil || rc != 0 || msg != ""
	limits := p.grant.Limits
	out := runner.Result{Usage: abi.Usage{MemoryBytes: in.k.peak}}
	if in.guest != nil {
		out.Usage.MemoryBytes += uint64(in.guest.Size())
	}
	if limits.Fuel > 0 {
		used := in.budget.Used()
		out.Usage.Fuel = &used
	}
	var kerr errKernelMemory
	switch {
	case in.budget.Err() != nil && in.budget.Err().Code == abi.CodeFuelExhausted:
		out.Err = abi.Errorf(abi.CodeFuelExhausted, "tool %s: %s", p.tool, in.budget.Err().Message)
	case ctx.Err() != nil:
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			out.Err = abi.Errorf(abi.CodeTimeout, "tool %s exceeded its %s time limit", p.tool, limits.Timeout)
		} else {
			out.Err = abi.Errorf(abi.CodeTimeout, "tool %s: call canceled", p.tool)
		}
	case in.mem.exceeded || errors.As(err, &kerr):
		out.Err = abi.Errorf(abi.CodeMemoryLimit, "tool %s exceeded its %d-byte memory limit", p.tool, limits.MemoryBytes)
	case failed && in.guard != nil && in.guard.Denials() > 0:
		out.Err = in.guard.LastDenial()
	case failed && in.mounts != nil && in.mounts.Denials.Count() > 0:
		out.Err = runner.Refused(abi.Errorf(abi.CodeToolError, "%s", toolMessage(msg, rc, err)), in.mounts.Denials.Lines(), in.mounts.Denials.Count())
	case failed && in.hostErr != nil:
		out.Err = in.hostErr
	case in.outputOver > 0:
		out.Err = abi.Errorf(abi.CodeOutputLimit, "tool %s produced %d bytes of output, over its %d-byte limit", p.tool, in.outputOver, limits.MaxOutputBytes)
	case failed:
		out.Err = abi.Errorf(abi.CodeToolError, "%s", toolMessage(msg, rc, err))
	default:
		out.Output = in.k.output()
	}
	out.Logs = in.logs.Lines()
	if out.Err != nil {
		p.log.Debug("call failed", "code", out.Err.Code, "error", out.Err.Message)
	}
	return out
}

// toolMessage is the TOOL_ERROR message: the plugin's own error_set
// message when it set one, else what went wrong.
func toolMessage(msg string, rc uint32, err error) string {
	if msg != "" {
		return msg
	}
	var exit *sys.ExitError
	switch {
	case errors.As(err, &exit):
		return fmt.Sprintf("plugin exited with code %d", exit.ExitCode())
	case err != nil:
		s := err.Error()
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[:i]
		}
		return "plugin trapped: " + s
	}
	return fmt.Sprintf("plugin returned code %d", rc)
}

// Interface guards
var _ runner.Prepared = (*prepared)(nil)
