package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/approval"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/profile"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/host/wire"
)

// RunAgentInput is the AG-UI request body of POST /v1/agents/{profile}/runs
// (threadId is the session).
type RunAgentInput struct {
	ThreadID       string            `json:"threadId"`
	RunID          string            `json:"runId"`
	State          json.RawMessage   `json:"state,omitempty"`
	Messages       []AGUIMessage     `json:"messages"`
	Tools          []json.RawMessage `json:"tools,omitempty"`
	Context        []json.RawMessage `json:"context,omitempty"`
	ForwardedProps json.RawMessage   `json:"forwardedProps,omitempty"`
	// Resume answers the interrupts that ended the thread's previous
	// run (agui_approve.go).
	Resume []AGUIResume `json:"resume,omitempty"`
}

// AGUIMessage is a message of a RunAgentInput: a user, system or
// developer message, an assistant message with its tool calls, or a tool
// message answering one. All of them are taken in as the conversation.
type AGUIMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCalls  []AGUIToolCall  `json:"toolCalls,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
}

// AGUIToolCall is a tool call of an AG-UI assistant message.
type AGUIToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// AGUIEvent is one server-sent event of a run: RUN_STARTED,
// TEXT_MESSAGE_START / _CONTENT / _END, TOOL_CALL_START / _ARGS / _END,
// TOOL_CALL_RESULT (with ui_schema), RUN_FINISHED or RUN_ERROR.
type AGUIEvent struct {
	Type         string         `json:"type"`
	ThreadID     string         `json:"threadId,omitempty"`
	RunID        string         `json:"runId,omitempty"`
	MessageID    string         `json:"messageId,omitempty"`
	Role         string         `json:"role,omitempty"`
	Delta        string         `json:"delta,omitempty"`
	ToolCallID   string         `json:"toolCallId,omitempty"`
	ToolCallName string         `json:"toolCallName,omitempty"`
	ParentMsgID  string         `json:"parentMessageId,omitempty"`
	Content      *string        `json:"content,omitempty"`
	UISchema     map[string]any `json:"ui_schema,omitempty"`
	Result       any            `json:"result,omitempty"`
	Message      string         `json:"message,omitempty"`
	Code         string         `json:"code,omitempty"`
	// Outcome is RUN_FINISHED's when the run stopped at interrupts.
	Outcome *AGUIOutcome `json:"outcome,omitempty"`
	// Name and Value are a CUSTOM event's.
	Name  string `json:"name,omitempty"`
	Value any    `json:"value,omitempty"`
}

// CodeStepEvent is the name of the CUSTOM event a run sends for each call
// a code-mode program made: progress the client may show under the
// run_code call, never a tool call of the model's (a client would send
// that back as history the model did not write).
const CodeStepEvent = "agenthost.code_step"

// CodeStep is the value of a CodeStepEvent.
type CodeStep struct {
	ToolCallID       string          `json:"toolCallId"`
	ParentToolCallID string          `json:"parentToolCallId"`
	Tool             string          `json:"tool"`
	Args             json.RawMessage `json:"args,omitempty"`
	Status           string          `json:"status"`
	Code             string          `json:"code,omitempty"`
	DurationMs       float64         `json:"durationMs"`
}

// NewSession is the body of POST /v1/sessions.
type NewSession struct {
	Profile string `json:"profile"`
}

// SessionRef is the answer of POST /v1/sessions.
type SessionRef struct {
	ID string `json:"id"`
}

// UserMessage is the body of POST /v1/sessions/{id}/messages.
type UserMessage struct {
	Content string `json:"content"`
}

// HistoryMessage is a stored message as history returns it: a tool
// message carries its ToolAgentOutput and the ui_schema compiled from
// its ui_hints, as the live stream did.
type HistoryMessage struct {
	store.Message
	ToolAgentOutput *agent.ToolAgentOutput `json:"tool_agent_output,omitempty"`
	UISchema        map[string]any         `json:"ui_schema,omitempty"`
}

// History is the answer of GET /v1/sessions/{id}/history.
type History struct {
	Session  store.Session    `json:"session"`
	Messages []HistoryMessage `json:"messages"`
}

func (s *Server) newSession(w http.ResponseWriter, r *http.Request, c *call) {
	var req NewSession
	if !readJSON(w, r, &req, true) {
		return
	}
	if _, ok := c.tenant.Profiles[req.Profile]; !ok {
		writeError(w, http.StatusNotFound, "UNKNOWN_PROFILE", fmt.Sprintf("no profile %q", req.Profile))
		return
	}
	ses, err := s.o.Store.CreateSession(r.Context(), c.p.Tenant, req.Profile)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "STORE", err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, SessionRef{ses.ID})
}

func (s *Server) history(w http.ResponseWriter, r *http.Request, c *call) {
	id := r.PathValue("id")
	ses, err := s.o.Store.Session(r.Context(), c.p.Tenant, id)
	if err == nil {
		var msgs []store.Message
		if msgs, err = s.o.Store.Messages(r.Context(), c.p.Tenant, id); err == nil {
			out := History{Session: ses, Messages: []HistoryMessage{}}
			for _, m := range msgs {
				hm := HistoryMessage{Message: m}
				var meta agent.Record
				if len(m.Metadata) > 0 && json.Unmarshal(m.Metadata, &meta) == nil {
					hm.ToolAgentOutput, hm.UISchema = meta.Output, meta.UISchema
				}
				out.Messages = append(out.Messages, hm)
			}
			writeJSON(w, http.StatusOK, out)
			return
		}
	}
	s.storeError(w, err)
}

func (s *Server) storeError(w http.ResponseWriter, err error) {
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrTaken) {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no such session")
		return
	}
	writeError(w, http.StatusInternalServerError, "STORE", err.Error())
}

// postMessage runs the session's agent on a user message, answering with
// the AG-UI stream.
func (s *Server) postMessage(w http.ResponseWriter, r *http.Request, c *call) {
	var req UserMessage
	if !readJSON(w, r, &req, true) {
		return
	}
	ses, err := s.o.Store.Session(r.Context(), c.p.Tenant, r.PathValue("id"))
	if err != nil {
		s.storeError(w, err)
		return
	}
	s.runStream(w, r, c, ses, req.Content, newRunID(), nil, false)
}

// agentRun is the AG-UI endpoint.
func (s *Server) agentRun(w http.ResponseWriter, r *http.Request, c *call) {
	var in RunAgentInput
	if !readJSON(w, r, &in, false) {
		return
	}
	prof := r.PathValue("profile")
	if _, ok := c.tenant.Profiles[prof]; !ok {
		writeError(w, http.StatusNotFound, "UNKNOWN_PROFILE", fmt.Sprintf("no profile %q", prof))
		return
	}
	if !validID(in.ThreadID) || (in.RunID != "" && !validID(in.RunID)) {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENTS", "threadId (and runId) must be 1 to 128 letters, digits, '.', '_' or '-'")
		return
	}
	if len(in.Tools) > 0 {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENTS", "client-side tools are not supported: the agent's tools are its profile's")
		return
	}
	if s.resumeRun(w, r, c, in) {
		return
	}
	hist, task, msg := clientConversation(in.Messages)
	if msg != "" {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENTS", msg)
		return
	}
	ses, err := s.o.Store.Session(r.Context(), c.p.Tenant, in.ThreadID)
	if errors.Is(err, store.ErrNotFound) {
		ses, err = s.o.Store.CreateSessionID(r.Context(), c.p.Tenant, prof, in.ThreadID)
	}
	if err != nil {
		s.storeError(w, err)
		return
	}
	if in.RunID == "" {
		in.RunID = newRunID()
	}
	ses.Profile = prof
	s.runStream(w, r, c, ses, task, in.RunID, hist, true)
}

// clientConversation reads the messages an AG-UI client sends: the last
// must be the user's (the task); the ones before it, of every role, are
// the conversation so far (nil when there are none: the thread's stored
// history is used). msg says what is wrong, or "".
func clientConversation(in []AGUIMessage) (hist []llm.Message, task, msg string) {
	if len(in) == 0 {
		return nil, "", "messages hold no user message with text"
	}
	last := in[len(in)-1]
	if last.Role != "user" {
		return nil, "", fmt.Sprintf("the last message is the %s's: it must be the user's (the task)", last.Role)
	}
	if task = textOf(last.Content); strings.TrimSpace(task) == "" {
		return nil, "", "the last user message has no text"
	}
	for i, m := range in[:len(in)-1] {
		switch m.Role {
		case "user":
			hist = append(hist, llm.Message{Role: llm.RoleUser, Content: textOf(m.Content)})
		case "system", "developer":
			hist = append(hist, llm.Message{Role: llm.RoleSystem, Content: textOf(m.Content)})
		case "assistant":
			am := llm.Message{Role: llm.RoleAssistant, Content: textOf(m.Content)}
			for _, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Function.Name == "" {
					return nil, "", fmt.Sprintf("messages[%d]: a tool call needs an id and a function name", i)
				}
				am.ToolCalls = append(am.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
			hist = append(hist, am)
		case "tool":
			if m.ToolCallID == "" {
				return nil, "", fmt.Sprintf("messages[%d]: a tool message needs its toolCallId", i)
			}
			hist = append(hist, llm.Message{Role: llm.RoleTool, ToolCallID: m.ToolCallID, Content: textOf(m.Content)})
		default:
			return nil, "", fmt.Sprintf("messages[%d]: role %q: want user, system, developer, assistant or tool", i, m.Role)
		}
	}
	return pairCalls(hist), task, ""
}

// storedConversation rebuilds a thread's conversation from the store:
// user messages, assistant turns with their tool calls (under the host's
// IDs), tool results and answers.
func storedConversation(prior []store.Message) []llm.Message {
	var out []llm.Message
	for _, m := range prior {
		var meta agent.Record
		if len(m.Metadata) > 0 {
			_ = json.Unmarshal(m.Metadata, &meta)
		}
		switch m.Role {
		case "user":
			out = append(out, llm.Message{Role: llm.RoleUser, Content: m.Content})
		case "assistant":
			out = append(out, llm.Message{Role: llm.RoleAssistant, Content: m.Content, ToolCalls: meta.ToolCalls})
		case "tool":
			id := ""
			if meta.Output != nil {
				id = meta.Output.ToolCallID
			}
			out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: m.Content})
		}
	}
	return pairCalls(out)
}

// pairCalls makes a conversation one the providers accept: a tool call
// nobody answered (a run cut short) is dropped, and a tool result that
// answers no call of the turn before it (action mode's, or one whose
// call is gone) becomes a user message saying whose result it is.
func pairCalls(msgs []llm.Message) []llm.Message {
	answered := map[string]bool{}
	for _, m := range msgs {
		if m.Role == llm.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	var out []llm.Message
	open := map[string]string{} // call ID -> tool name, of the latest assistant turn
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleAssistant:
			var calls []llm.ToolCall
			open = map[string]string{}
			for _, c := range m.ToolCalls {
				if answered[c.ID] {
					calls = append(calls, c)
					open[c.ID] = c.Name
				}
			}
			m.ToolCalls = calls
			if m.Content == "" && len(calls) == 0 {
				continue
			}
		case llm.RoleTool:
			if _, ok := open[m.ToolCallID]; !ok {
				m = llm.Message{Role: llm.RoleUser, Content: "(a tool result) " + m.Content}
				break
			}
			delete(open, m.ToolCallID)
		default:
			open = map[string]string{}
		}
		out = append(out, m)
	}
	return out
}

// textOf reads an AG-UI message content: a string, or parts with text.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

// runStream runs the agent of ses on task and streams AG-UI events; the
// user message, each tool result and the answer are stored as they come.
// A client that goes away cancels the run.
//
// hist is the conversation so far as the client sent it; nil means the
// thread's stored one. With interrupts, a tool call that waits for
// approval ends the stream with an interrupt and the run waits, held for
// a resume (agui_approve.go); without, the call waits for a decision
// given elsewhere (the console, the HTTP API).
func (s *Server) runStream(w http.ResponseWriter, r *http.Request, c *call, ses store.Session, task, runID string, hist []llm.Message, interrupts bool) {
	if s.draining.Load() {
		writeError(w, http.StatusServiceUnavailable, "DRAINING", "the server is shutting down")
		return
	}
	prof := c.tenant.Profiles[ses.Profile]
	if prof == nil {
		writeError(w, http.StatusNotFound, "UNKNOWN_PROFILE", fmt.Sprintf("no profile %q", ses.Profile))
		return
	}
	provider, model, err := c.tenant.Provider(prof)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "PROVIDER", err.Error())
		return
	}
	ctx := r.Context()
	prior, err := s.o.Store.Messages(ctx, c.p.Tenant, ses.ID)
	if err != nil {
		s.storeError(w, err)
		return
	}
	if hist == nil {
		hist = storedConversation(prior)
	}
	if _, err := s.o.Store.AppendMessage(ctx, c.p.Tenant, ses.ID, store.Message{Role: "user", Content: task}); err != nil {
		s.storeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	first := func(e AGUIEvent) {
		b, _ := json.Marshal(e)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	first(AGUIEvent{Type: "RUN_STARTED", ThreadID: ses.ID, RunID: runID})
	var ids []string
	if len(prof.Inventory) > 0 {
		for _, t := range c.tenant.Host.Tools(host.Query{}) {
			ids = append(ids, t.ToolID)
		}
		if ids, err = prof.Resolve(ids); err != nil {
			first(AGUIEvent{Type: "RUN_ERROR", Message: err.Error(), Code: "PROFILE"})
			return
		}
	}
	names := ids
	if names == nil {
		for _, t := range c.tenant.Host.Tools(host.Query{}) {
			names = append(names, t.ToolID)
		}
	}
	tab, _ := wire.NewTable(names)
	// The run outlives its stream when it stops at an interrupt; its
	// events queue in ar until a stream carries them (pump), and a client
	// that goes away mid-stream cancels it.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ar := newAGUIRun(cancel, func(name string) string {
		if tab != nil {
			if id, ok := tab.ID(name); ok {
				return id
			}
		}
		return name
	})
	if interrupts && c.tenant.Host.Approvals() != nil {
		runCtx = approval.WithNotify(runCtx, ar.ask)
	}
	send := ar.push
	ctx = runCtx
	s.runs.Add(1)
	untrack := s.track(c.p.Tenant, ses.ID)
	go func() {
		defer s.runs.Done()
		defer untrack()
		defer cancel()
		s.runAgent(ctx, c, ses, prof, provider, model, task, runID, ids, hist, tab, send, ar.finish)
	}()
	s.pump(w, r, c.p.Tenant, ses.ID, runID, ar)
}

// runAgent runs the agent of ses on task, sending its AG-UI events, the
// last one through finish.
func (s *Server) runAgent(ctx context.Context, c *call, ses store.Session, prof *profile.Profile, provider llm.Provider, model, task, runID string,
	ids []string, hist []llm.Message, tab *wire.Table, send, finish func(AGUIEvent)) {
	msgN := 0
	// open is the text message being streamed ("" when none); parent the
	// latest turn's message, which its tool calls belong to; pending a
	// text turn not stored yet.
	var open, parent, pending string
	res, err := agent.Run(ctx, c.tenant.Host, task, agent.Options{
		Provider: provider, Model: model, Mode: prof.Mode, SystemPrompt: prof.SystemPrompt, MaxIterations: prof.MaxIterations,
		Tools: ids, History: hist,
		OnEvent: func(ev agent.Event) {
			switch ev.Kind {
			case "delta":
				if open == "" {
					msgN++
					open = fmt.Sprintf("%s-msg-%d", runID, msgN)
					send(AGUIEvent{Type: "TEXT_MESSAGE_START", MessageID: open, Role: "assistant"})
				}
				send(AGUIEvent{Type: "TEXT_MESSAGE_CONTENT", MessageID: open, Delta: ev.Text})
			case "model":
				parent = ""
				switch {
				case open != "":
					send(AGUIEvent{Type: "TEXT_MESSAGE_END", MessageID: open})
					parent, open = open, ""
				case strings.TrimSpace(ev.Text) != "":
					msgN++
					parent = fmt.Sprintf("%s-msg-%d", runID, msgN)
					send(AGUIEvent{Type: "TEXT_MESSAGE_START", MessageID: parent, Role: "assistant"})
					send(AGUIEvent{Type: "TEXT_MESSAGE_CONTENT", MessageID: parent, Delta: ev.Text})
					send(AGUIEvent{Type: "TEXT_MESSAGE_END", MessageID: parent})
				}
				pending = ""
				if len(ev.Calls) > 0 {
					// The turn and its calls (under the host's IDs) are
					// history for the thread's next run.
					meta, _ := json.Marshal(agent.Record{ToolCalls: ev.Calls})
					if _, err := s.o.Store.AppendMessage(context.WithoutCancel(ctx), c.p.Tenant, ses.ID, store.Message{Role: "assistant", Content: ev.Text, Metadata: meta}); err != nil {
						s.o.Logger.Error("storing a model turn", "error", err)
					}
				} else if strings.TrimSpace(ev.Text) != "" {
					// A text turn is history too once calls follow it (an
					// ACTION block); the last one is the answer, stored
					// at the end.
					pending = ev.Text
				}
			case "tool_start":
				if pending != "" {
					if _, err := s.o.Store.AppendMessage(context.WithoutCancel(ctx), c.p.Tenant, ses.ID, store.Message{Role: "assistant", Content: pending}); err != nil {
						s.o.Logger.Error("storing a model turn", "error", err)
					}
					pending = ""
				}
				send(AGUIEvent{Type: "TOOL_CALL_START", ToolCallID: ev.CallID, ToolCallName: ev.Tool, ParentMsgID: parent})
				if len(ev.Args) > 0 {
					send(AGUIEvent{Type: "TOOL_CALL_ARGS", ToolCallID: ev.CallID, Delta: string(ev.Args)})
				}
				send(AGUIEvent{Type: "TOOL_CALL_END", ToolCallID: ev.CallID})
			case "code_step":
				v := CodeStep{ToolCallID: ev.CallID, Tool: ev.Tool, Args: ev.Args, Status: ev.Status, DurationMs: float64(ev.Duration.Microseconds()) / 1000}
				if st := ev.Step; st != nil {
					v.ParentToolCallID = st.ParentCallID
					if st.Error != nil {
						v.Code = string(st.Error.Code)
					}
				}
				send(AGUIEvent{Type: "CUSTOM", Name: CodeStepEvent, Value: v})
			case "tool":
				if ev.Step == nil {
					return
				}
				text := string(ev.Step.Result)
				if ev.Step.Error != nil {
					text = ev.Step.Error.Error()
				}
				ui := CompileUI(ev.Step.UIHints, ev.Step.Result)
				toolID := ev.Step.ToolName
				if tab != nil {
					if id, ok := tab.ID(toolID); ok {
						toolID = id
					}
				}
				ms := float64(ev.Duration.Microseconds()) / 1000
				meta, _ := json.Marshal(agent.Record{ToolID: toolID, Output: ev.Step, UISchema: ui, DurationMs: &ms})
				if _, err := s.o.Store.AppendMessage(context.WithoutCancel(ctx), c.p.Tenant, ses.ID, store.Message{Role: "tool", Content: text, Metadata: meta}); err != nil {
					s.o.Logger.Error("storing a tool message", "error", err)
				}
				msgN++
				send(AGUIEvent{Type: "TOOL_CALL_RESULT", MessageID: fmt.Sprintf("%s-msg-%d", runID, msgN), ToolCallID: ev.CallID, Role: "tool", Content: &text, UISchema: ui})
			}
		},
	})
	if err != nil {
		finish(AGUIEvent{Type: "RUN_ERROR", Message: err.Error(), Code: "AGENT"})
		return
	}
	if res.Answer != "" {
		if _, err := s.o.Store.AppendMessage(context.WithoutCancel(ctx), c.p.Tenant, ses.ID, store.Message{Role: "assistant", Content: res.Answer}); err != nil {
			s.o.Logger.Error("storing the answer", "error", err)
		}
	}
	if res.Status == "failed" {
		finish(AGUIEvent{Type: "RUN_ERROR", Message: res.Error, Code: "PROVIDER"})
		return
	}
	finish(AGUIEvent{Type: "RUN_FINISHED", ThreadID: ses.ID, RunID: runID, Result: map[string]any{"status": res.Status, "answer": res.Answer, "iterations": res.Iterations}})
}

// CompileUI turns a tool's ui_hints and its result into the ui_schema a
// front-end renders: {"kind": …} plus each hint, a JSON pointer resolved
// in the result (a hint pointing at nothing is left out) or the literal.
// A table without columns gets the keys of its first row.
func CompileUI(hints map[string]string, result json.RawMessage) map[string]any {
	if len(hints) == 0 || hints["kind"] == "" {
		return nil
	}
	var doc any
	_ = json.Unmarshal(result, &doc)
	out := map[string]any{"kind": hints["kind"]}
	for k, v := range hints {
		if k == "kind" {
			continue
		}
		if strings.HasPrefix(v, "/") {
			if val, ok := pointer(doc, v); ok {
				out[k] = val
			}
			continue
		}
		out[k] = v
	}
	if out["kind"] == "table" {
		if rows, ok := out["rows"].([]any); ok && out["columns"] == nil && len(rows) > 0 {
			if first, ok := rows[0].(map[string]any); ok {
				var cols []string
				for c := range first {
					cols = append(cols, c)
				}
				sort.Strings(cols)
				out["columns"] = cols
			}
		}
	}
	return out
}

// pointer resolves a JSON pointer (RFC 6901) in doc.
func pointer(doc any, p string) (any, bool) {
	if p == "" || p == "/" {
		return doc, true
	}
	cur := doc
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
