package host

import (
	"context"
	"errors"
)

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
