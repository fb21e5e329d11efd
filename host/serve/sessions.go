package serve

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"

	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/store"
)

// newRunID names an agent run. It is random, not a counter: a counter
// starts again at each restart, and a thread's history would then hold
// two runs of one ID.
func newRunID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "run-" + hex.EncodeToString(b)
}

// Run states of a user message in GET /v1/sessions/{id}/messages.
const (
	RunAnswered    = "answered"
	RunRunning     = "running"
	RunInterrupted = "interrupted"
)

// SessionMessage is a stored message as the paged history returns it: a
// HistoryMessage, and for a user message the state of the run it started.
type SessionMessage struct {
	HistoryMessage
	// Run is, for a user message, "answered" (the run stored its
	// answer), "running" (it is still going on this server) or
	// "interrupted" (it ended without an answer: stopped by its client,
	// failed, or cut by a restart).
	Run string `json:"run,omitempty"`
}

// MessagePage is the answer of GET /v1/sessions/{id}/messages.
type MessagePage struct {
	Session  store.Session    `json:"session"`
	Messages []SessionMessage `json:"messages"`
	// More says older messages remain: ask again with before = the
	// first message's seq.
	More bool `json:"more"`
}

// activeRuns counts the agent runs in progress per server, tenant and
// session, so that history tells a run still going from one cut short.
var activeRuns sync.Map // activeKey -> *int

type activeKey struct {
	s               *Server
	tenant, session string
}

var activeMu sync.Mutex

// track marks a run of the tenant's session as in progress until the
// returned func is called.
func (s *Server) track(tenant, session string) func() {
	k := activeKey{s, tenant, session}
	activeMu.Lock()
	v, _ := activeRuns.LoadOrStore(k, new(int))
	*v.(*int)++
	activeMu.Unlock()
	return func() {
		activeMu.Lock()
		defer activeMu.Unlock()
		n := v.(*int)
		if *n--; *n == 0 {
			activeRuns.Delete(k)
		}
	}
}

func (s *Server) running(tenant, session string) bool {
	_, ok := activeRuns.Load(activeKey{s, tenant, session})
	return ok
}

// pageLimit reads the limit (1 to store.MaxPage, default def) of a
// listing; msg says what is wrong, or "".
func pageLimit(r *http.Request, def int) (int, string) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, ""
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > store.MaxPage {
		return 0, "limit must be a whole number from 1 to " + strconv.Itoa(store.MaxPage)
	}
	return n, ""
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request, c *call) {
	limit, msg := pageLimit(r, 50)
	if msg != "" {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENTS", msg)
		return
	}
	page, err := s.o.Store.ListSessions(r.Context(), c.p.Tenant, r.URL.Query().Get("cursor"), limit)
	if errors.Is(err, store.ErrCursor) {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENTS", "cursor: not one this server gave (pass a page's next as it is)")
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "STORE", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) sessionMessages(w http.ResponseWriter, r *http.Request, c *call) {
	limit, msg := pageLimit(r, 100)
	var before int64
	if v := r.URL.Query().Get("before"); v != "" && msg == "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			msg = "before must be a message's seq (a whole number from 1)"
		}
		before = n
	}
	if msg != "" {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENTS", msg)
		return
	}
	id := r.PathValue("id")
	ses, err := s.o.Store.Session(r.Context(), c.p.Tenant, id)
	if err != nil {
		s.storeError(w, err)
		return
	}
	page, err := s.o.Store.MessagesPage(r.Context(), c.p.Tenant, id, before, limit)
	if err != nil {
		s.storeError(w, err)
		return
	}
	out := MessagePage{Session: ses, Messages: make([]SessionMessage, 0, len(page.Messages)), More: page.More}
	// Only the session's latest run can still be going.
	var lastUser int64
	for _, m := range page.Messages {
		if m.Role == "user" {
			lastUser = m.Seq
		}
	}
	live := lastUser != 0 && before == 0 && s.running(c.p.Tenant, id)
	for _, m := range page.Messages {
		sm := SessionMessage{HistoryMessage: historyMessage(m)}
		if m.Role == "user" {
			switch {
			case page.Answered[m.Seq]:
				sm.Run = RunAnswered
			case live && m.Seq == lastUser:
				sm.Run = RunRunning
			default:
				sm.Run = RunInterrupted
			}
		}
		out.Messages = append(out.Messages, sm)
	}
	writeJSON(w, http.StatusOK, out)
}

// historyMessage is m with a tool message's record and ui_schema read
// from its metadata.
func historyMessage(m store.Message) HistoryMessage {
	hm := HistoryMessage{Message: m}
	var meta agent.Record
	if len(m.Metadata) > 0 && json.Unmarshal(m.Metadata, &meta) == nil {
		hm.ToolAgentOutput, hm.UISchema = meta.Output, meta.UISchema
	}
	return hm
}

func (s *Server) analytics(w http.ResponseWriter, r *http.Request, c *call) {
	a, err := s.o.Store.ToolAnalytics(r.Context(), c.p.Tenant)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "STORE", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, a)
}
