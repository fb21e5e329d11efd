package host

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
)

// errClosed is the cause of every context the host cancels in Close.
var errClosed = errors.New("the host was closed")

// prepared is a tool's grant and its prepared runner. It is built once, by
// the host, under the host's own context: a caller only waits for it, so a
// caller that gives up neither cancels the preparation nor sees its error
// remembered. done is closed when the fields are set.
type prepared struct {
	done  chan struct{}
	grant *policy.Grant
	run   runner.Prepared
	err   *abi.Error

	// refs counts the calls using run; once the tool has left the
	// catalogue (retired) the last one frees run's resources.
	refMu       sync.Mutex
	refs        int
	retired     bool
	releaseOnce sync.Once
}

// prepare returns the tool's grant and prepared runner, starting the
// preparation on first use and waiting for it, or for the caller's
// context. The error is the caller's (CANCELLED / TIMEOUT) or the host's
// (closed); a load error is in prepared.err.
func (h *Host) prepare(ctx context.Context, t *manifest.Tool) (*prepared, *abi.Error) {
	p := h.startPrepare(t)
	if p == nil {
		return nil, closedError()
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return nil, callerError(ctx, 0, "while the tool was being prepared")
	}
	return p, nil
}

// startPrepare starts the preparation of t unless it has started, and
// returns it without waiting; nil once the host is closed.
func (h *Host) startPrepare(t *manifest.Tool) *prepared {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	p := h.prepared[t]
	if p == nil {
		p = &prepared{done: make(chan struct{})}
		h.prepared[t] = p
		go h.build(t, p)
	}
	return p
}

// build prepares t. A preparation cut short by Close is forgotten, so the
// failure is never remembered as a load error; a panic inside a runner is
// a load error with the stack in the host's log, never a crash.
func (h *Host) build(t *manifest.Tool, p *prepared) {
	defer close(p.done)
	defer func() {
		if r := recover(); r != nil {
			p.run = nil
			if h.life.Err() != nil {
				p.err = closedError()
				h.forget(t, p)
				return
			}
			h.log.Error("tool preparation panicked", "tool", t.ToolID, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			p.err = abi.Errorf(abi.CodeLoadError, "tool %s failed to load: the runner failed while preparing it", t.ToolID)
		}
	}()
	p.grant = h.grant(t)
	if p.grant.Denied {
		return
	}
	r, ok := h.runners[runnerKey(t)]
	if !ok {
		p.err = abi.Errorf(abi.CodeLoadError, "tool %s: handler %q is not supported by this host", t.ToolID, runnerKey(t))
		return
	}
	run, err := r.Prepare(h.life, t, p.grant)
	switch {
	case h.life.Err() != nil:
		p.err = closedError()
		h.forget(t, p)
	case err != nil:
		p.err = asLoadError(t.ToolID, err)
	default:
		p.run = run
	}
}

// forget drops a preparation that says nothing about the tool.
func (h *Host) forget(t *manifest.Tool, p *prepared) {
	h.mu.Lock()
	if h.prepared[t] == p {
		delete(h.prepared, t)
	}
	h.mu.Unlock()
}

// begin registers a call and ties its context to the host's lifetime; end
// must be called when it returns. A closed host refuses new calls.
func (h *Host) begin(ctx context.Context) (context.Context, func(), *abi.Error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, nil, closedError()
	}
	h.inflight.Add(1)
	h.mu.Unlock()
	cctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(h.life, func() { cancel(errClosed) })
	return cctx, func() {
		stop()
		cancel(nil)
		h.inflight.Done()
	}, nil
}

// callerError is the failure of a call whose context ended: CANCELLED when
// the caller cancelled it or the host was closed, TIMEOUT naming the
// caller's deadline when that passed. toolTimeout, when set, is the tool's
// own limit, named so the two deadlines are never confused.
func callerError(ctx context.Context, toolTimeout time.Duration, when string) *abi.Error {
	if errors.Is(context.Cause(ctx), errClosed) {
		return closedError()
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		msg := "the caller's deadline passed " + when
		if toolTimeout > 0 {
			msg += fmt.Sprintf(" (the tool's own timeoutMs limit is %d ms)", toolTimeout.Milliseconds())
		}
		return abi.Errorf(abi.CodeTimeout, "%s", msg)
	}
	return abi.Errorf(abi.CodeCancelled, "the caller cancelled the call %s; the tool was stopped", when)
}

func closedError() *abi.Error {
	return abi.Errorf(abi.CodeCancelled, "the host was closed; the call did not run or was stopped")
}

// Close stops the host: new calls are refused with CANCELLED, calls and
// preparations in progress are cancelled (their guests stopped) and
// answered with CANCELLED, then the runners and their compiled modules are
// released. It waits for the calls to return until ctx is done, but not for
// a compilation in progress: that ends on its own and its result is
// dropped. Closing twice is a no-op.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	h.stopLife(errClosed)
	drained := make(chan struct{})
	go func() { h.inflight.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-ctx.Done():
		h.log.Warn("close: calls still running when the context ended; releasing the runners anyway")
	}
	var errs []error
	for _, c := range h.closers {
		errs = append(errs, c(ctx))
	}
	h.closers = nil
	return errors.Join(errs...)
}

// active is how many calls use p now.
func (p *prepared) active() int {
	p.refMu.Lock()
	defer p.refMu.Unlock()
	return p.refs
}
