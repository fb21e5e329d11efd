package host

import (
	"context"
	"errors"
	"sync"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
)

// lazyRunner makes its runner when the first tool of its kind is
// prepared: a wazero runtime compiles its host modules when it starts (a
// few milliseconds each), which a host that never runs such a tool should
// not pay at New.
type lazyRunner struct {
	start func(ctx context.Context) (runner.Runner, func(context.Context) error, error)

	mu     sync.Mutex
	r      runner.Runner
	stop   func(context.Context) error
	err    error
	closed bool
}

// errRunnerClosed is Prepare's error after Close.
var errRunnerClosed = errors.New("runner closed")

// get returns the runner, starting it on first use.
func (l *lazyRunner) get(ctx context.Context) (runner.Runner, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errRunnerClosed
	}
	if l.r == nil && l.err == nil {
		l.r, l.stop, l.err = l.start(ctx)
	}
	return l.r, l.err
}

// Prepare implements runner.Runner.
func (l *lazyRunner) Prepare(ctx context.Context, tool *manifest.Tool, grant *policy.Grant) (runner.Prepared, error) {
	r, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return r.Prepare(ctx, tool, grant)
}

// Close closes the runner if it was started. Idempotent.
func (l *lazyRunner) Close(ctx context.Context) error {
	l.mu.Lock()
	stop := l.stop
	l.closed, l.stop = true, nil
	l.mu.Unlock()
	if stop == nil {
		return nil
	}
	return stop(ctx)
}

// Interface guard
var _ runner.Runner = (*lazyRunner)(nil)
