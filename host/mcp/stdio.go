package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
)

// The fast path over stdio. The SDK's stdio transport hands every message
// between goroutines and decodes it several times on its way to the
// handler and back, which costs about as much as a tool call. The line
// filter that already reads every line before the SDK does (taskLines)
// answers the commonest request itself: a plain tools/call (the same shape
// as over HTTP, fast.go) once the SDK has answered initialize on the
// stream. Its answer is written through the same writer as the SDK's
// messages, one whole line per write under one lock, so lines never
// interleave. Every other line goes to the SDK unchanged; a
// notifications/cancelled also cancels a call on the fast path, and the
// end of the stream (EOF, or the context) cancels the calls still running
// and waits for them, as the SDK does with its own. Options.NoFastPath
// turns it off.

// stdioFast is the fast path of one stream served by RunIO.
type stdioFast struct {
	s       *Server
	out     *lineWriter
	session string // the stream's key among the fast path's running calls
	ctx     context.Context
	cancel  context.CancelFunc

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// stdioStreams numbers the streams, for their keys.
var stdioStreams atomic.Uint64

func (s *Server) newStdioFast(out *lineWriter) *stdioFast {
	ctx, cancel := context.WithCancel(context.Background())
	return &stdioFast{s: s, out: out, session: "stdio:" + strconv.FormatUint(stdioStreams.Add(1), 10), ctx: ctx, cancel: cancel}
}

// take looks at one line before the SDK reads it, and reports whether it
// answered it (then the SDK never sees it).
func (f *stdioFast) take(line []byte) bool {
	if f.out.ready.Load() && bytes.Contains(line, []byte(`"tools/call"`)) && f.call(line) {
		return true
	}
	if !bytes.Contains(line, []byte(`"notifications/cancelled"`)) && !bytes.Contains(line, []byte(`"initialize"`)) {
		return false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil {
		return false
	}
	switch m.Method {
	case "notifications/cancelled":
		f.s.fast.cancel(f.session, m.Params)
	case "initialize":
		if key, ok := idKey(m.ID); ok {
			f.out.expect(key)
		}
	}
	return false
}

// call runs a plain tools/call in the background and reports true; false
// (nothing done) for any other request.
func (f *stdioFast) call(line []byte) bool {
	req, ok := f.s.plain(line)
	if !ok {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		res, err := f.s.runFast(f.ctx, f.session, req)
		_, _ = f.out.Write(append(fastAnswer(req.id, res, err), '\n'))
	}()
	return true
}

// close cancels the stream's calls still running and waits for them.
func (f *stdioFast) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.cancel()
	f.wg.Wait()
}

// lineWriter is a stream's output: each Write is one whole message line,
// written under one lock. Until the answer to initialize has been
// written, it watches for it (the fast path takes calls only after).
type lineWriter struct {
	w     io.WriteCloser
	ready atomic.Bool

	mu   sync.Mutex
	init string // idKey of the initialize request awaiting its answer
}

// expect notes the ID of an initialize request on its way to the SDK.
func (l *lineWriter) expect(key string) {
	l.mu.Lock()
	l.init = key
	l.mu.Unlock()
}

// Write implements io.Writer.
func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.init != "" && !l.ready.Load() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(p, &m) == nil && m.Result != nil {
			if key, ok := idKey(m.ID); ok && key == l.init {
				l.ready.Store(true)
			}
		}
	}
	return l.w.Write(p)
}

// Close implements io.Closer.
func (l *lineWriter) Close() error { return l.w.Close() }
