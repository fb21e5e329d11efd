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
// runtime option that makes wazero check the context, the per-call
// context with its deadline and cancel causes, and the context-aware
// sleep. Metered tools (fuel > 0) are also stopped by the meter's refill
// at the deadline; making every tool metered and dropping
// WithCloseOnContextDone is the swap this file is kept small for.

// Causes of a stopped call, read back with context.Cause.
var (
	errTimeout     = errors.New("timeout")
	errOutputLimit = errors.New("output limit")
	errMemoryLimit = errors.New("memory limit")
)

// interruptConfig adds the interruption settings to the runtime config:
// wazero checks the context at function entries and loop back-edges and
// closes the module once it is done.
func interruptConfig(c wazero.RuntimeConfig) wazero.RuntimeConfig {
	return c.WithCloseOnContextDone(true)
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
