// Package native runs Go functions that a host application registered as
// tools (handler type "service-method"): in-process, trusted code, to
// which the host still hands only what the grant allows (see
// [GrantFrom]: the facade's FS, WriteFile, HTTPClient and Env read it).
//
// A Func receives the validated, coerced arguments as compact JSON and
// returns its output as JSON. Each call runs under the grant's timeout (the
// context is cancelled), a panic is a TOOL_ERROR with the stack in the
// logs, and the output cap applies.
package native

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
)

// Func is a registered Go function: JSON arguments in, JSON output out. An
// error that is an *abi.Error keeps its code; any other is TOOL_ERROR.
type Func func(ctx context.Context, input []byte) ([]byte, error)

// Defaults for a zero limit in a grant.
const (
	DefaultTimeout        = 10 * time.Second
	DefaultMaxOutputBytes = 1 << 20
)

// Runner holds the registered functions by service and method.
type Runner struct {
	mu  sync.RWMutex
	fns map[string]Func
}

// New returns an empty Runner.
func New() *Runner { return &Runner{fns: map[string]Func{}} }

func key(service, method string) string { return service + "\x00" + method }

// Register binds fn to (service, method), replacing any earlier one.
func (r *Runner) Register(service, method string, fn Func) {
	r.mu.Lock()
	r.fns[key(service, method)] = fn
	r.mu.Unlock()
}

// Has reports whether (service, method) is registered.
func (r *Runner) Has(service, method string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.fns[key(service, method)]
	return ok
}

// Services lists the registered services as "service.method", sorted.
func (r *Runner) Services() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.fns))
	for k := range r.fns {
		s, m, _ := strings.Cut(k, "\x00")
		out = append(out, s+"."+m)
	}
	sort.Strings(out)
	return out
}

// Prepare binds tool (handler service-method) to its registered function.
func (r *Runner) Prepare(_ context.Context, tool *manifest.Tool, grant *policy.Grant) (runner.Prepared, error) {
	h := tool.Handler
	r.mu.RLock()
	fn, ok := r.fns[key(h.ServiceName, h.MethodName)]
	r.mu.RUnlock()
	if !ok {
		return nil, abi.Errorf(abi.CodeLoadError, "tool %s: no service %q with method %q is registered (registered: %s)",
			tool.ToolID, h.ServiceName, h.MethodName, strings.Join(r.Services(), ", "))
	}
	return &prepared{id: tool.ToolID, fn: fn, grant: grant}, nil
}

type prepared struct {
	id    string
	fn    Func
	grant *policy.Grant
}

// Call is what a running native tool may ask of the host: its grant, and a
// record of the accesses the host refused it.
type Call struct {
	Grant *policy.Grant
	// Env holds this call's own variables (short-lived credentials).
	Env     map[string]string
	mu      sync.Mutex
	refused []string
}

// Refuse records a refused access (for the call's logs and its
// PERMISSION_DENIED code).
func (c *Call) Refuse(line string) {
	c.mu.Lock()
	if len(c.refused) < 64 {
		c.refused = append(c.refused, line)
	}
	c.mu.Unlock()
}

type callKey struct{}

// GrantFrom returns the call a native tool runs in, nil outside one.
func GrantFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

// Run implements runner.Prepared.
func (p *prepared) Run(ctx context.Context, req runner.Request) (res runner.Result, err error) {
	lim := p.grant.Limits
	if lim.Timeout <= 0 {
		lim.Timeout = DefaultTimeout
	}
	if lim.MaxOutputBytes <= 0 {
		lim.MaxOutputBytes = DefaultMaxOutputBytes
	}
	call := &Call{Grant: p.grant, Env: req.Env}
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, callKey{}, call), lim.Timeout)
	defer cancel()
	res.Logs = []string{}
	out, ferr := p.invoke(ctx, req.Input, &res)
	call.mu.Lock()
	refused := append([]string(nil), call.refused...)
	call.mu.Unlock()
	res.Logs = append(res.Logs, refused...)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && (ferr != nil || out == nil):
		res.Err = abi.Errorf(abi.CodeTimeout, "tool %s exceeded its %s time limit", p.id, lim.Timeout)
	case ferr != nil:
		var ae *abi.Error
		if errors.As(ferr, &ae) {
			res.Err = ae
		} else {
			res.Err = abi.Errorf(abi.CodeToolError, "%s", ferr.Error())
		}
		res.Err = runner.Refused(res.Err, refused, len(refused))
	case int64(len(out)) > lim.MaxOutputBytes:
		res.Err = abi.Errorf(abi.CodeOutputLimit, "output of %d bytes is larger than the %d-byte cap", len(out), lim.MaxOutputBytes)
	default:
		res.Output = bytes.TrimSpace(out)
	}
	return res, nil
}

// invoke calls the function, turning a panic into an error with the stack
// in the logs.
func (p *prepared) invoke(ctx context.Context, input []byte, res *runner.Result) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			res.Logs = append(res.Logs, fmt.Sprintf("panic: %v", r), string(debug.Stack()))
			out, err = nil, fmt.Errorf("the tool panicked: %v", r)
		}
	}()
	return p.fn(ctx, input)
}

// Interface guards
var (
	_ runner.Runner   = (*Runner)(nil)
	_ runner.Prepared = (*prepared)(nil)
)
