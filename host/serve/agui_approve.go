package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host/approval"
)

// Approvals in AG-UI runs: human-in-the-loop interrupts.
//
// A run's tool calls wait in the tenant host's approval broker like any
// other call (the console and the HTTP API see them). When one starts to
// wait, the run's stream ends with RUN_FINISHED whose outcome is
// {"type": "interrupt", "interrupts": [...]}: one interrupt per waiting
// call, its id the approval's ID, reason "tool_approval", the tool call
// it concerns, a message, the answer's JSON Schema ({"decision":
// "allow-once" | "allow" | "deny", "minutes": N}), when it expires, and
// the request (tool, redacted arguments, digest, grant, risks) in its
// metadata. The agent's run itself goes on waiting, held by the server.
// The client answers with a new run on the thread whose input carries
// resume entries, one per interrupt: "resolved" with the decision as
// payload, or "cancelled" (a denial). The server gives the broker each
// decision, recorded with the token's tenant and subject, and that new
// run's stream carries the waiting run on from the call (its result, or
// PERMISSION_DENIED for a denial, then the model's next turns) until it
// ends or interrupts again. The first decision wins: a call decided in
// the console meanwhile keeps that decision, and one whose approval timed
// out was refused (PERMISSION_DENIED saying so); either way the resume
// streams what the run did. Only the AG-UI run endpoint interrupts; a
// run started by POST /v1/sessions/{id}/messages lets its calls wait for
// the console or the HTTP API.

// AGUIResume is a resume entry of a RunAgentInput: the answer to one
// interrupt of the thread's previous run.
type AGUIResume struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
}

// AGUIOutcome is why a run ended (RUN_FINISHED's outcome): "interrupt"
// with the interrupts to answer. A completed run sends none.
type AGUIOutcome struct {
	Type       string          `json:"type"`
	Interrupts []AGUIInterrupt `json:"interrupts,omitempty"`
}

// AGUIInterrupt is a tool call waiting for a person's decision.
type AGUIInterrupt struct {
	ID             string          `json:"id"`
	Reason         string          `json:"reason"`
	Message        string          `json:"message,omitempty"`
	ToolCallID     string          `json:"toolCallId,omitempty"`
	ResponseSchema json.RawMessage `json:"responseSchema,omitempty"`
	ExpiresAt      string          `json:"expiresAt,omitempty"`
	Metadata       map[string]any  `json:"metadata,omitempty"`
}

// InterruptApproval is the reason of an interrupt for a tool call's
// approval; MetaApproval the metadata key of its request.
const (
	InterruptApproval = "tool_approval"
	MetaApproval      = "agenthost/approval"
)

// decisionSchema is the answer an approval interrupt expects.
var decisionSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"decision":{"type":"string","enum":["allow-once","allow","deny"],"description":"allow-once runs this call; allow also runs the same calls for the minutes given; deny refuses it"},` +
	`"minutes":{"type":"integer","minimum":1,"maximum":1440,"description":"for allow: how long the same calls run without asking"}},"required":["decision"]}`)

// Bounds of the runs held for interrupts.
const (
	// maxHeldRuns bounds the suspended runs of one server; past it the
	// ended ones that nobody resumed are forgotten first.
	maxHeldRuns = 1024
	// maxRunEvents bounds the events a run queues while no stream
	// carries them; beyond, the oldest text deltas are dropped (the
	// store keeps every message).
	maxRunEvents = 4096
)

// aguiRun is an agent run that may outlive its stream: its events queue
// here until a stream carries them, and the calls waiting for approval
// become interrupts.
type aguiRun struct {
	mu      sync.Mutex
	events  []AGUIEvent
	final   bool // events ends with the run's last event
	pending []AGUIInterrupt
	asked   map[string]string        // interrupt IDs shown, not answered -> the broker's tenant
	open    []openCall               // tool calls started and not ended
	linked  map[string]bool          // tool call IDs an interrupt names
	tenants map[string]string        // approval ID -> the broker's tenant
	wake    chan struct{}            // a new event, interrupt or the end
	cancel  context.CancelFunc       // ends the run
	ids     func(name string) string // a model's tool name -> tool ID
	started time.Time
}

type openCall struct{ id, tool string }

func newAGUIRun(cancel context.CancelFunc, ids func(string) string) *aguiRun {
	return &aguiRun{asked: map[string]string{}, linked: map[string]bool{}, tenants: map[string]string{}, wake: make(chan struct{}, 1), cancel: cancel, ids: ids, started: time.Now()}
}

func (a *aguiRun) signal() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// push queues an event of the run.
func (a *aguiRun) push(e AGUIEvent) {
	a.mu.Lock()
	switch e.Type {
	case "TOOL_CALL_START":
		a.open = append(a.open, openCall{e.ToolCallID, a.ids(e.ToolCallName)})
	case "TOOL_CALL_RESULT":
		for i, c := range a.open {
			if c.id == e.ToolCallID {
				a.open = append(a.open[:i], a.open[i+1:]...)
				break
			}
		}
	}
	if len(a.events) >= maxRunEvents {
		for i, q := range a.events {
			if q.Type == "TEXT_MESSAGE_CONTENT" {
				a.events = append(a.events[:i], a.events[i+1:]...)
				break
			}
		}
	}
	a.events = append(a.events, e)
	a.mu.Unlock()
	a.signal()
}

// finish queues the run's last event.
func (a *aguiRun) finish(e AGUIEvent) {
	a.mu.Lock()
	a.events = append(a.events, e)
	a.final = true
	a.mu.Unlock()
	a.signal()
}

// ask turns a call that starts to wait for a decision into an interrupt
// (approval.WithNotify: it must not block).
func (a *aguiRun) ask(r approval.Request) {
	a.mu.Lock()
	call := ""
	for _, c := range a.open {
		if c.tool == r.Tool && !a.linked[c.id] {
			call = c.id
			a.linked[c.id] = true
			break
		}
	}
	var args any
	_ = json.Unmarshal(r.Arguments, &args)
	shown, _ := json.Marshal(args)
	msg := fmt.Sprintf("Allow the call of %s with %s?", r.Tool, shown)
	if len(r.Risks) > 0 {
		msg += " It needs approval for: " + strings.Join(r.Risks, ", ") + "."
	}
	a.tenants[r.ID] = r.Tenant
	a.pending = append(a.pending, AGUIInterrupt{ID: r.ID, Reason: InterruptApproval, Message: msg, ToolCallID: call,
		ResponseSchema: decisionSchema, ExpiresAt: r.Expires.UTC().Format(time.RFC3339), Metadata: map[string]any{MetaApproval: r}})
	a.mu.Unlock()
	a.signal()
}

// take returns the queued events; when none are queued, the interrupts
// not yet shown (now asked); and whether the run's last event is among
// the events.
func (a *aguiRun) take() (evs []AGUIEvent, interrupts []AGUIInterrupt, final bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	evs, a.events = a.events, nil
	if len(evs) > 0 {
		return evs, nil, a.final
	}
	if a.final {
		return nil, nil, true
	}
	interrupts, a.pending = a.pending, nil
	for _, i := range interrupts {
		a.asked[i.ID] = a.tenants[i.ID]
	}
	return nil, interrupts, false
}

// pump streams the run's events on w as run runID of thread, until the
// run ends or interrupts (then it stays held for a resume), or the
// client goes away (then the run is cancelled).
func (s *Server) pump(w http.ResponseWriter, r *http.Request, tenant, thread, runID string, a *aguiRun) {
	flusher, _ := w.(http.Flusher)
	send := func(e AGUIEvent) {
		b, _ := json.Marshal(e)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	for {
		evs, interrupts, final := a.take()
		for _, e := range evs {
			if e.Type == "RUN_FINISHED" {
				e.ThreadID, e.RunID = thread, runID
			}
			send(e)
		}
		if final {
			return
		}
		if len(interrupts) > 0 {
			s.hold(tenant, thread, a)
			send(AGUIEvent{Type: "RUN_FINISHED", ThreadID: thread, RunID: runID, Outcome: &AGUIOutcome{Type: "interrupt", Interrupts: interrupts}})
			return
		}
		select {
		case <-a.wake:
		case <-r.Context().Done():
			a.cancel()
			return
		}
	}
}

// heldKey names a thread's run held for a resume.
type heldKey struct {
	s              *Server
	tenant, thread string
}

var (
	heldMu sync.Mutex
	held   = map[heldKey]*aguiRun{}
)

// hold keeps a for the thread's resume.
func (s *Server) hold(tenant, thread string, a *aguiRun) {
	heldMu.Lock()
	defer heldMu.Unlock()
	held[heldKey{s, tenant, thread}] = a
	if len(held) <= maxHeldRuns {
		return
	}
	// Forget the oldest runs that ended without a resume first, then
	// the oldest of all.
	keys := make([]heldKey, 0, len(held))
	for k := range held {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		ei, ej := held[keys[i]].ended(), held[keys[j]].ended()
		if ei != ej {
			return ei
		}
		return held[keys[i]].started.Before(held[keys[j]].started)
	})
	for _, k := range keys[:len(held)-maxHeldRuns] {
		held[k].cancel()
		delete(held, k)
	}
}

func (a *aguiRun) ended() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.final
}

// release takes the thread's held run, if any.
func (s *Server) release(tenant, thread string) *aguiRun {
	heldMu.Lock()
	defer heldMu.Unlock()
	k := heldKey{s, tenant, thread}
	a := held[k]
	delete(held, k)
	return a
}

// errResume says what is wrong with a run's resume entries (400).
var errResume = errors.New("resume")

// resume answers the interrupts of a held run with the entries: every
// interrupt shown must be answered, and nothing else. Decisions go to
// the broker recorded as by.
func resume(a *aguiRun, b *approval.Broker, entries []AGUIResume, by string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	type answer struct {
		id      string
		d       approval.Decision
		minutes int
	}
	var answers []answer
	seen := map[string]bool{}
	for i, e := range entries {
		if _, open := a.asked[e.InterruptID]; !open || seen[e.InterruptID] {
			return fmt.Errorf("%w: resume[%d]: %q is not an open interrupt of this thread (open: %s)", errResume, i, e.InterruptID, strings.Join(keys(a.asked), ", "))
		}
		seen[e.InterruptID] = true
		switch e.Status {
		case "cancelled":
			answers = append(answers, answer{e.InterruptID, approval.Deny, 0})
		case "resolved":
			d, minutes, err := decisionOf(e.Payload)
			if err != nil {
				return fmt.Errorf("%w: resume[%d]: %v", errResume, i, err)
			}
			answers = append(answers, answer{e.InterruptID, d, minutes})
		default:
			return fmt.Errorf("%w: resume[%d]: status %q: want resolved or cancelled", errResume, i, e.Status)
		}
	}
	if len(seen) != len(a.asked) {
		return fmt.Errorf("%w: every open interrupt needs an answer (open: %s)", errResume, strings.Join(keys(a.asked), ", "))
	}
	for _, x := range answers {
		// A request decided meanwhile (the console, its timeout) keeps
		// its first decision; the run then carries on with it.
		if _, _, err := b.Decide(a.asked[x.id], x.id, x.d, x.minutes, by); err != nil && !errors.Is(err, approval.ErrNotFound) {
			return fmt.Errorf("%w: %s: %v", errResume, x.id, err)
		}
		delete(a.asked, x.id)
	}
	return nil
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// decisionOf reads a resolved interrupt's payload: {"decision": …,
// "minutes": N} or the decision alone as a string.
func decisionOf(raw json.RawMessage) (approval.Decision, int, error) {
	var p struct {
		Decision string `json:"decision"`
		Minutes  int    `json:"minutes"`
	}
	if err := json.Unmarshal(raw, &p.Decision); err != nil {
		if err := json.Unmarshal(raw, &p); err != nil {
			return "", 0, fmt.Errorf(`payload: want {"decision": "allow-once" | "allow" | "deny", "minutes": N}`)
		}
	}
	d, err := approval.ParseDecision(p.Decision)
	if err != nil {
		return "", 0, err
	}
	if p.Minutes < 0 || p.Minutes > approval.DefaultMaxMinutes {
		return "", 0, fmt.Errorf("minutes %d: between 1 and %d (0 or absent: %d)", p.Minutes, approval.DefaultMaxMinutes, approval.DefaultMinutes)
	}
	if d != approval.Allow {
		p.Minutes = 0
	}
	return d, p.Minutes, nil
}

// approverOf names who answers with principal p: "<tenant>/<subject>".
func approverOf(p Principal) string {
	sub := p.Subject
	if sub == "" {
		sub = "unknown"
	}
	return p.Tenant + "/" + sub
}

// resumeRun serves a run request on a thread whose previous run stopped
// at interrupts, and reports whether it did: with resume entries it
// answers them and streams the run on; without, it refuses (409) while
// that run waits. A thread without a held run is left to a new run,
// unless the request carries resume entries (409: nothing to resume).
func (s *Server) resumeRun(w http.ResponseWriter, r *http.Request, c *call, in RunAgentInput) bool {
	a := s.release(c.p.Tenant, in.ThreadID)
	if a == nil {
		if len(in.Resume) > 0 {
			writeError(w, http.StatusConflict, "NO_INTERRUPT", fmt.Sprintf("thread %q has no run waiting at interrupts: start a new run without resume entries", in.ThreadID))
			return true
		}
		return false
	}
	if len(in.Resume) == 0 {
		if a.ended() {
			return false // it ended meanwhile (decided elsewhere, or timed out) and nobody resumed it
		}
		s.hold(c.p.Tenant, in.ThreadID, a)
		a.mu.Lock()
		open := strings.Join(keys(a.asked), ", ")
		a.mu.Unlock()
		writeError(w, http.StatusConflict, "INTERRUPTED", fmt.Sprintf("thread %q has a run that stopped at interrupts (%s) and has not ended: resume it with a resume entry for each", in.ThreadID, open))
		return true
	}
	if !validID(in.RunID) {
		in.RunID = newRunID()
	}
	b := c.tenant.Host.Approvals()
	if b == nil {
		s.hold(c.p.Tenant, in.ThreadID, a)
		writeError(w, http.StatusConflict, "NO_INTERRUPT", "this tenant has no approvals to answer")
		return true
	}
	if err := resume(a, b, in.Resume, approverOf(c.p)); err != nil {
		s.hold(c.p.Tenant, in.ThreadID, a)
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENTS", strings.TrimPrefix(err.Error(), errResume.Error()+": "))
		return true
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	b0, _ := json.Marshal(AGUIEvent{Type: "RUN_STARTED", ThreadID: in.ThreadID, RunID: in.RunID})
	fmt.Fprintf(w, "data: %s\n\n", b0)
	s.pump(w, r, c.p.Tenant, in.ThreadID, in.RunID, a)
	return true
}
