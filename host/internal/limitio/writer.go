package limitio

import (
	"errors"
	"sync"
)

// ErrLimit is returned by [Writer.Write] once the cap has been exceeded.
var ErrLimit = errors.New("output limit exceeded")

// Writer keeps the first Limit bytes written to it. The write that would
// pass the cap keeps what fits, calls the OnExceed hook once and fails
// with [ErrLimit]; every later write fails too.
type Writer struct {
	mu       sync.Mutex
	buf      []byte
	limit    int64
	exceeded bool
	onExceed func()
}

// NewWriter returns a Writer capped at limit bytes (limit < 0 is treated
// as 0). onExceed, if not nil, is called once, synchronously, when the
// cap is first exceeded: runners use it to stop the guest.
func NewWriter(limit int64, onExceed func()) *Writer {
	if limit < 0 {
		limit = 0
	}
	return &Writer{limit: limit, onExceed: onExceed}
}

// Write implements io.Writer.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.exceeded {
		w.mu.Unlock()
		return 0, ErrLimit
	}
	room := w.limit - int64(len(w.buf))
	if int64(len(p)) <= room {
		w.buf = append(w.buf, p...)
		w.mu.Unlock()
		return len(p), nil
	}
	w.buf = append(w.buf, p[:room]...)
	w.exceeded = true
	hook := w.onExceed
	w.mu.Unlock()
	if hook != nil {
		hook()
	}
	return int(room), ErrLimit
}

// Bytes returns the bytes kept so far. The slice is not copied: read it
// only after the writer is done.
func (w *Writer) Bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf
}

// Exceeded reports whether a write went past the cap.
func (w *Writer) Exceeded() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.exceeded
}
