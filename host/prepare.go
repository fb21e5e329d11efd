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

// active is how many calls use p now.
func (p *prepared) active() int {
	p.refMu.Lock()
	defer p.refMu.Unlock()
	return p.refs
}

// retireGone forgets the preparations of tools no longer in the
// catalogue and frees their runners once their last call has returned.
func (h *Host) retireGone() {
	live := map[*manifest.Tool]bool{}
	for _, t := range h.reg.All() {
		live[t] = true
	}
	h.mu.Lock()
	var gone []*prepared
	for t, p := range h.prepared {
		if !live[t] {
			delete(h.prepared, t)
			gone = append(gone, p)
		}
	}
	h.mu.Unlock()
	for _, p := range gone {
		p.retire()
	}
}

// retire frees the prepared runner once no call uses it.
func (p *prepared) retire() {
	p.refMu.Lock()
	p.retired = true
	idle := p.refs == 0
	p.refMu.Unlock()
	if idle {
		go p.release() // waits for a preparation still running
	}
}

// acquire counts a call on p; finish must follow.
func (p *prepared) acquire() {
	p.refMu.Lock()
	p.refs++
	p.refMu.Unlock()
}

func (p *prepared) finish() {
	p.refMu.Lock()
	p.refs--
	last := p.refs == 0 && p.retired
	p.refMu.Unlock()
	if last {
		p.release()
	}
}

func (p *prepared) release() {
	<-p.done
	p.releaseOnce.Do(func() {
		if c, ok := p.run.(runner.Closer); ok {
			_ = c.Close()
		}
	})
}

func (h *Host) grant(t *manifest.Tool) *policy.Grant {
	return h.policy.Grant(t, h.opts.LookupEnv)
}

// asLoadError maps a Prepare error to an *abi.Error, keeping its code when
// the chain carries one.
func asLoadError(id string, err error) *abi.Error {
	var ae *abi.Error
	if errors.As(err, &ae) {
		if ae.Message == "" {
			return abi.Errorf(ae.Code, "tool %s: %s", id, err.Error())
		}
		if ae.Code != abi.CodeLoadError {
			return ae
		}
	}
	return abi.Errorf(abi.CodeLoadError, "tool %s failed to load: %s", id, err.Error())
}
