package wasm

import (
	"context"
	"errors"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"

	"github.com/agenthost/agenthost/host/internal/meter"
)

// This file is the one place where stopping a guest is configured: the
// runtime options, the per-call context with its deadline and cancel
// causes, the meter budget and the context-aware sleep.
//
// Every tool runs its instrumented module (host/internal/meter, done in
// Prepare): the module counts its instructions and calls the meter's
// refill import every slice of about 10^7 of them; refill traps with
// TIMEOUT once the call's context is done, and with FUEL_EXHAUSTED when a
// fuel limit is spent. So the runtime does not use wazero's
// WithCloseOnContextDone, which checks the context from every loop and
// costs 9-17 times the CPU on compute-heavy guests (docs/design/FUEL.md).

// Causes of a stopped call, read back with context.Cause.
var (
	errTimeout     = errors.New("timeout")
	errOutputLimit = errors.New("output limit")
	errMemoryLimit = errors.New("memory limit")
)

// interruptConfig returns the runtime config for metered interruption:
// wazero's own context checks stay off (see above).
func interruptConfig(c wazero.RuntimeConfig) wazero.RuntimeConfig {
	return c.WithCloseOnContextDone(false)
}

// instrument returns the module every call of a tool runs, and its cache
// key: the meter's rewrite of code (cached in memory and on disk).
func (r *Runner) instrument(code []byte, sum string) ([]byte, string, error) {
	out, err := r.meter.Instrument(code)
	if err != nil {
		return nil, "", err
	}
	return out, "metered-" + sum, nil
}

// withBudget attaches the call's meter budget to ctx: the deadline (the
// context's) always, the fuel limit when limits.fuel > 0.
func (c *call) withBudget(ctx context.Context, fuel uint64) context.Context {
	c.budget = &meter.Budget{Fuel: fuel}
	return meter.WithBudget(ctx, c.budget)
}

// callContext returns the context of one call: done when the parent is,
// when timeout passes (cause errTimeout) or when stop is called with a
// cause (errOutputLimit, errMemoryLimit).
func callContext(parent context.Context, timeout time.Duration) (ctx context.Context, stop context.CancelCauseFunc, release func()) {
	ctx, stop = context.WithCancelCause(parent)
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, timeout, errTimeout)
	return ctx, stop, func() {
		cancelTimeout()
		stop(nil)
	}
}

// sleeper returns the guest's nanosleep (poll_oneoff clock subscriptions,
// Go's time.Sleep): a real sleep that returns early when ctx is done, so
// a sleeping guest is stopped by the timeout like a looping one.
func sleeper(ctx context.Context) sys.Nanosleep {
	return meter.Nanosleep(ctx)
}
