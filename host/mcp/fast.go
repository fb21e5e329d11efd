package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/abi"
)

// The fast path of Streamable HTTP. The SDK's handling of a POST costs
// more than a tool call itself: each message is decoded four times, and
// handed between goroutines on its way to the handler and back as
// server-sent events. So the server answers the commonest request itself:
// a plain tools/call on a session the SDK has answered initialize.
//
// A request is plain when it holds only jsonrpc, an integer or string id,
// the method and params of only name and arguments (no _meta, so no
// progress token and no per-request protocol version; no task), and
// names a listed tool. Every other request goes to the SDK as before, and
// so does every request the SDK might refuse or treat otherwise: one with
// an Origin header, a Host that is not loopback on a loopback listener, a
// protocol version other than the session's, a content type other than
// JSON, or an Accept without both JSON and event streams.
//
// The answer is the one the SDK would send, the bytes encoding/json
// writes for the same CallToolResult (resultJSON), as one JSON object
// rather than an event stream, which the protocol allows. A client's
// notifications/cancelled and its disconnect cancel a call on the fast
// path too. Options.NoFastPath turns it off, for an application whose SDK
// middleware must see every tools/call. Stdio has a fast path of its own
// (stdio.go).

// plainCall is the one shape of request the fast path takes, decoded
// strictly in one pass by go-json-experiment/json (encoding/json's
// proposed successor). A request is not plain if it holds any unknown
// member (params included), a duplicate name, a name that differs only
// in case, invalid UTF-8, or trailing data.
type plainCall struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      jsontext.Value `json:"id"`
	Method  string         `json:"method"`
	Params  plainParams    `json:"params"`
}

// plainParams are the params of a plain tools/call.
type plainParams struct {
	Name      string         `json:"name"`
	Arguments jsontext.Value `json:"arguments"`
}

// fastKey names a call on the fast path: its session and its request ID.
type fastKey struct {
	session, id string
}

// idKey is the request ID raw as a key: "n:" and an integer, or "s:" and
// a string; false for any other ID (the SDK's path then answers).
func idKey(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return "s:" + s, true
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return "", false
	}
	return "n:" + strconv.FormatInt(n, 10), true
}

// fast is the fast path's state: the HTTP sessions answered initialize,
// with the protocol version each negotiated, and the calls running.
type fast struct {
	mu       sync.Mutex
	sessions map[string]string // HTTP session ID -> version, initialize answered (until the session ends)
	running  map[fastKey]context.CancelFunc
	calls    atomic.Uint64 // answered on the fast path
}

// observe follows the HTTP sessions through the SDK's handling of
// initialize, and forgets each when it ends. Like the SDK, the fast path
// takes calls once initialize has been answered.
func (f *fast) observe(method string, req sdk.Request, res sdk.Result, err error) {
	if err != nil || req == nil || method != "initialize" {
		return
	}
	ss, ok := req.GetSession().(*sdk.ServerSession)
	r, answered := res.(*sdk.InitializeResult)
	if !ok || !answered || ss.ID() == "" {
		return
	}
	id := ss.ID()
	f.mu.Lock()
	_, known := f.sessions[id]
	f.sessions[id] = r.ProtocolVersion
	f.mu.Unlock()
	if !known {
		go func() {
			_ = ss.Wait()
			f.mu.Lock()
			delete(f.sessions, id)
			f.mu.Unlock()
		}()
	}
}

// cancel cancels the call of session named by a notifications/cancelled
// params, if it runs on the fast path.
func (f *fast) cancel(session string, params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	id, ok := idKey(p.RequestID)
	if !ok {
		return
	}
	f.mu.Lock()
	cancel := f.running[fastKey{session, id}]
	f.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// plainRequest is a plain tools/call, decoded.
type plainRequest struct {
	id   json.RawMessage // the request ID as sent
	key  string          // its idKey
	name string          // the tool's wire name
	tool string          // its tool ID
	args json.RawMessage
}

// plain decodes a message that is a plain tools/call naming a listed
// tool; false for any other message.
func (s *Server) plain(msg []byte) (plainRequest, bool) {
	var c plainCall
	if jsonv2.Unmarshal(msg, &c, jsonv2.RejectUnknownMembers(true)) != nil || c.JSONRPC != "2.0" || c.Method != "tools/call" {
		return plainRequest{}, false
	}
	key, ok := idKey(json.RawMessage(c.ID))
	if !ok {
		return plainRequest{}, false
	}
	s.mu.Lock()
	tool, ok := s.ids[c.Params.Name]
	s.mu.Unlock()
	if ok && s.approves(tool) {
		return plainRequest{}, false // its call may ask for a decision (approve.go)
	}
	return plainRequest{id: json.RawMessage(c.ID), key: key, name: c.Params.Name, tool: tool, args: json.RawMessage(c.Params.Arguments)}, ok
}

// runFast runs a call on the fast path and returns its result as JSON.
func (s *Server) runFast(ctx context.Context, session string, req plainRequest) (json.RawMessage, error) {
	key := fastKey{session, req.key}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := &s.fast
	f.mu.Lock()
	f.running[key] = cancel
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.running, key)
		f.mu.Unlock()
	}()
	env := s.callTool(ctx, req.tool, req.args)
	f.calls.Add(1)
	return resultJSON(req.name, env)
}

// resultJSON is json.Marshal(resultOf(name, env)), byte for byte. A
// success, the fast paths' commonest answer, is written here: the output
// as text, and also as structured content when it is an object.
func resultJSON(name string, env abi.Envelope) (json.RawMessage, error) {
	if env.Status != abi.StatusSuccess && env.Error != nil {
		return json.Marshal(resultOf(name, env))
	}
	text, err := json.Marshal(string(env.Output))
	if err != nil {
		return nil, err
	}
	out := bytes.NewBuffer(make([]byte, 0, 2*len(env.Output)+64))
	out.WriteString(`{"content":[{"type":"text","text":`)
	out.Write(text)
	out.WriteString(`}]`)
	if isObject(env.Output) {
		structured, err := json.Marshal(json.RawMessage(env.Output))
		if err != nil {
			return nil, err
		}
		out.WriteString(`,"structuredContent":`)
		out.Write(structured)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// serveFast answers an HTTP POST of body on the fast path, and reports
// whether it did; false leaves the request, untouched, to the SDK.
func (s *Server) serveFast(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if s.noFast || !bytes.Contains(body, []byte(`"tools/call"`)) {
		return false
	}
	session := r.Header.Get("Mcp-Session-Id")
	s.fast.mu.Lock()
	version, ok := s.fast.sessions[session]
	s.fast.mu.Unlock()
	if !ok || r.Header.Get("Mcp-Protocol-Version") != version || r.Header.Get("Origin") != "" ||
		!isJSON(r.Header.Get("Content-Type")) || !acceptsBoth(r.Header.Values("Accept")) || rebinding(r) {
		return false
	}
	req, ok := s.plain(body)
	if !ok {
		return false
	}
	// From here on the call has run: it is answered here, whatever
	// happens (never run again by the SDK).
	res, err := s.runFast(r.Context(), session, req)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(fastAnswer(req.id, res, err))
	return true
}

// fastAnswer is the JSON-RPC response to the request id of a call on the
// fast path that returned res, or err when its result could not be
// encoded.
func fastAnswer(id, res json.RawMessage, err error) []byte {
	member := "result"
	if err != nil {
		// A result that cannot be encoded (error details a tool made
		// unencodable) is the internal error the SDK would answer.
		member = "error"
		res, _ = json.Marshal(map[string]any{"code": -32603, "message": "the result cannot be encoded: " + err.Error()})
	}
	// The ID is an integer or a string (idKey), written back as sent.
	out := make([]byte, 0, len(res)+len(id)+40)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, bytes.TrimSpace(id)...)
	out = append(out, `,"`+member+`":`...)
	out = append(out, res...)
	return append(out, '}')
}

// isJSON reports whether a Content-Type is application/json.
func isJSON(ct string) bool {
	if ct == "application/json" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// acceptsBoth reports whether Accept headers take both application/json
// and text/event-stream, as the protocol requires of a POST (the SDK
// refuses the request otherwise).
func acceptsBoth(values []string) bool {
	jsonOK, streamOK := false, false
	for _, v := range values {
		for rest := v; rest != ""; {
			var part string
			part, rest, _ = strings.Cut(rest, ",")
			base, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// rebinding reports a request the SDK's DNS-rebinding protection would
// refuse: to a loopback listener, with a Host that is not loopback.
func rebinding(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return false
	}
	if tcp, ok := local.(*net.TCPAddr); ok {
		return tcp.IP.IsLoopback() && !loopback(r.Host)
	}
	return loopback(local.String()) && !loopback(r.Host)
}

// loopback reports whether addr (a host, with or without a port) is
// localhost or a loopback IP.
func loopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// cancelFast cancels the fast-path call a notifications/cancelled body
// names, for the request's session (the SDK then handles the
// notification as well).
func (s *Server) cancelFast(r *http.Request, body []byte) {
	var n struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &n) == nil && n.Method == "notifications/cancelled" {
		s.fast.cancel(r.Header.Get("Mcp-Session-Id"), n.Params)
	}
}
