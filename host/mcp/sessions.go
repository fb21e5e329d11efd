package mcp

import (
	"bytes"
	"net/http"
	"sync"
	"time"
)

// Defaults of Options.SessionIdle and Options.MaxSessions.
const (
	DefaultSessionIdle = 30 * time.Minute
	DefaultMaxSessions = 1000
)

// sessions bounds the Streamable HTTP sessions of a server: one idle
// longer than idle (no request of its own) is closed, and an initialize
// beyond max open sessions is refused. Every request is seen here, the
// fast path's too, which the SDK's own idle timer would not see.
type sessions struct {
	idle time.Duration
	max  int
	mu   sync.Mutex
	seen map[string]time.Time // session ID → its last request
	stop chan struct{}
	done sync.WaitGroup
}

// touch records a request of the session id.
func (s *Server) touch(id string) {
	s.sessions.mu.Lock()
	if _, ok := s.sessions.seen[id]; ok {
		s.sessions.seen[id] = time.Now()
	}
	s.sessions.mu.Unlock()
}

// admitSession reports whether a request that would open a session (an
// initialize without a session ID) may; if not, it has answered 503.
func (s *Server) admitSession(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if r.Header.Get("Mcp-Session-Id") != "" || !bytes.Contains(body, []byte(`"initialize"`)) {
		return true
	}
	n := 0
	for ss := range s.srv.Sessions() {
		if ss.ID() != "" {
			n++
		}
	}
	if n < s.sessions.max {
		return true
	}
	w.Header().Set("Retry-After", "60")
	http.Error(w, "too many MCP sessions are open: close one (DELETE) or wait for an idle one to expire", http.StatusServiceUnavailable)
	return false
}

// sweepSessions closes the HTTP sessions idle since before now - idle,
// and returns how many it closed. A session met for the first time is
// taken as active now. Stdio sessions (no ID) are the client's to end.
func (s *Server) sweepSessions(now time.Time) int {
	live := map[string]bool{}
	closed := 0
	for ss := range s.srv.Sessions() {
		id := ss.ID()
		if id == "" {
			continue
		}
		live[id] = true
		s.sessions.mu.Lock()
		last, ok := s.sessions.seen[id]
		if !ok {
			s.sessions.seen[id] = now
		}
		s.sessions.mu.Unlock()
		if ok && now.Sub(last) > s.sessions.idle {
			_ = ss.Close()
			closed++
		}
	}
	s.sessions.mu.Lock()
	for id := range s.sessions.seen {
		if !live[id] {
			delete(s.sessions.seen, id)
		}
	}
	s.sessions.mu.Unlock()
	return closed
}

// sweepLoop sweeps every quarter of the idle timeout until Close.
func (s *Server) sweepLoop() {
	defer s.sessions.done.Done()
	t := time.NewTicker(max(s.sessions.idle/4, time.Second))
	defer t.Stop()
	for {
		select {
		case <-s.sessions.stop:
			return
		case now := <-t.C:
			if n := s.sweepSessions(now); n > 0 {
				s.log.Debug("idle MCP sessions closed", "sessions", n)
			}
		}
	}
}
