package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
)

// Both protocol revisions on the same endpoints, chosen per request.
//
// The SDK speaks 2026-07-28 (stateless: per-request _meta, server/discover,
// resultType, the routing headers) on stdio and on a stateless Streamable
// HTTP handler, and 2025-11-25 (initialize, sessions) on a stateful one.
// One HTTP handler cannot be both, so /mcp routes each POST: a request of
// a legacy session (Mcp-Session-Id) or an initialize goes to the stateful
// handler, one carrying the 2026-07-28 header or _meta to the stateless
// one. Before either sees it, the edge answers what the SDK answers
// leniently or not at all: a version neither handler speaks gets
// UnsupportedProtocolVersion listing ours (the SDK answers plain text, or
// treats an unknown _meta version as a legacy request), and a request
// with neither a session nor _meta gets an error that says what to send
// (the SDK serves it with made-up session state). Stdio gets the same
// checks line by line (modernLines).

// ProtocolModern is the stateless revision.
const ProtocolModern = "2026-07-28"

// Errors of the 2026-07-28 revision (basic/index, error codes).
const (
	codeHeaderMismatch     = -32020
	codeMissingCapability  = -32021
	codeUnsupportedVersion = -32022
)

// Versions are the protocol revisions the server speaks, newest first.
func Versions() []string { return sdk.SupportedProtocolVersions() }

// supported reports whether the server speaks revision v.
func supported(v string) bool { return slices.Contains(sdk.SupportedProtocolVersions(), v) }

// modern reports whether v is the stateless revision or a later one.
func modern(v string) bool { return v >= ProtocolModern }

// peeked is what the routing reads of a message: its method, ID, and the
// per-request fields of params._meta and the names the headers mirror.
type peeked struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Meta   map[string]json.RawMessage `json:"_meta"`
		Name   *string                    `json:"name"`
		URI    *string                    `json:"uri"`
		TaskID *string                    `json:"taskId"`
	} `json:"params"`
}

// request reports whether the message is a request (it has an ID).
func (p *peeked) request() bool { return len(p.ID) > 0 && string(p.ID) != "null" }

// metaVersion is the protocol version in _meta: the value, whether the
// key is there, and whether it is a string.
func (p *peeked) metaVersion() (v string, present, ok bool) {
	raw, present := p.Params.Meta[sdk.MetaKeyProtocolVersion]
	if !present {
		return "", false, false
	}
	ok = json.Unmarshal(raw, &v) == nil && v != ""
	return v, true, ok
}

// rpcError is a JSON-RPC error answer, with the HTTP status it takes.
type rpcError struct {
	status int
	id     json.RawMessage
	err    *jsonrpc.Error
}

// bytes is the error as one JSON-RPC response.
func (e *rpcError) bytes() []byte {
	id := e.id
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}{"2.0", id, e.err})
	return b
}

func newRPCError(status int, id json.RawMessage, code int64, data any, format string, a ...any) *rpcError {
	e := &jsonrpc.Error{Code: code, Message: fmt.Sprintf(format, a...)}
	if data != nil {
		e.Data, _ = json.Marshal(data)
	}
	return &rpcError{status: status, id: id, err: e}
}

// unsupportedVersion is the revision's error for a version we do not
// speak, listing the ones we do.
func unsupportedVersion(id json.RawMessage, requested string) *rpcError {
	return newRPCError(http.StatusBadRequest, id, codeUnsupportedVersion,
		sdk.UnsupportedProtocolVersionData{Supported: Versions(), Requested: requested},
		"unsupported protocol version %q: this server speaks %s", requested, strings.Join(Versions(), ", "))
}

// checkMeta checks the per-request fields of a request that declares a
// protocol version in _meta; nil when they are well formed and the
// version is one we speak.
func checkMeta(p *peeked) *rpcError {
	v, present, ok := p.metaVersion()
	switch {
	case !present:
		return newRPCError(http.StatusBadRequest, p.ID, jsonrpc.CodeInvalidParams, nil,
			"params._meta has no %q: a %s request carries it, with %q, in params._meta", sdk.MetaKeyProtocolVersion, ProtocolModern, sdk.MetaKeyClientCapabilities)
	case !ok:
		return newRPCError(http.StatusBadRequest, p.ID, jsonrpc.CodeInvalidParams, nil,
			"params._meta[%q] must be a protocol version string such as %q", sdk.MetaKeyProtocolVersion, ProtocolModern)
	case !supported(v):
		return unsupportedVersion(p.ID, v)
	case !modern(v):
		return nil // a legacy version named in _meta: the session protocol applies
	}
	caps, ok := p.Params.Meta[sdk.MetaKeyClientCapabilities]
	if !ok {
		return newRPCError(http.StatusBadRequest, p.ID, jsonrpc.CodeInvalidParams, nil,
			"params._meta has no %q: a %s request declares its client capabilities in every request ({} for none)", sdk.MetaKeyClientCapabilities, ProtocolModern)
	}
	if t := bytes.TrimSpace(caps); len(t) == 0 || t[0] != '{' {
		return newRPCError(http.StatusBadRequest, p.ID, jsonrpc.CodeInvalidParams, nil,
			"params._meta[%q] must be an object ({} for none)", sdk.MetaKeyClientCapabilities)
	}
	return nil
}

// noMeta is the error for a request that belongs to no revision: no
// session (or no initialize on stdio) and no per-request _meta.
func noMeta(id json.RawMessage, session string) *rpcError {
	return newRPCError(http.StatusBadRequest, id, jsonrpc.CodeInvalidParams, nil,
		"the request has no params._meta[%q] and there is no %s: a %s client sends that field and %q in every request's _meta; a 2025-11-25 client sends initialize first",
		sdk.MetaKeyProtocolVersion, session, ProtocolModern, sdk.MetaKeyClientCapabilities)
}

// headerValue decodes a routing header: plain, or the revision's base64
// sentinel (=?base64?…?=) for values that are not plain ASCII.
func headerValue(h string) (string, bool) {
	enc, ok := strings.CutPrefix(h, "=?base64?")
	if !ok {
		return h, true
	}
	enc, ok = strings.CutSuffix(enc, "?=")
	if !ok {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(enc)
	return string(b), err == nil
}

// checkHeaders checks the HTTP headers of a 2026-07-28 request against
// its body: MCP-Protocol-Version against _meta, Mcp-Method against the
// method, Mcp-Name against the name, URI or task ID.
func checkHeaders(r *http.Request, p *peeked, version string) *rpcError {
	mismatch := func(format string, a ...any) *rpcError {
		return newRPCError(http.StatusBadRequest, p.ID, codeHeaderMismatch, nil, "header mismatch: "+format, a...)
	}
	hv := r.Header.Get("Mcp-Protocol-Version")
	switch {
	case hv == "":
		return mismatch("the MCP-Protocol-Version header is missing (the request's _meta says %q)", version)
	case hv != version:
		return mismatch("the MCP-Protocol-Version header %q differs from params._meta[%q] %q", hv, sdk.MetaKeyProtocolVersion, version)
	}
	hm := r.Header.Get("Mcp-Method")
	switch {
	case hm == "":
		return mismatch("the Mcp-Method header is missing (the body's method is %q)", p.Method)
	case hm != p.Method:
		return mismatch("the Mcp-Method header %q differs from the body's method %q", hm, p.Method)
	}
	var body *string
	switch p.Method {
	case "tools/call", "prompts/get":
		body = p.Params.Name
	case "resources/read":
		body = p.Params.URI
	case "tasks/get", "tasks/update", "tasks/cancel":
		body = p.Params.TaskID
	default:
		return nil
	}
	raw, sent := r.Header["Mcp-Name"]
	if !sent {
		return mismatch("the Mcp-Name header is missing (required for %s)", p.Method)
	}
	name, ok := headerValue(raw[0])
	if !ok {
		return mismatch("the Mcp-Name header %q is not valid base64 between =?base64? and ?=", raw[0])
	}
	if body == nil || *body != name {
		b := "none"
		if body != nil {
			b = fmt.Sprintf("%q", *body)
		}
		return mismatch("the Mcp-Name header %q differs from the body's %s", name, b)
	}
	return nil
}

// route decides the revision of a POST to /mcp. It returns an error to
// answer at once, or whether the stateless (2026-07-28) handler takes
// the request; false leaves it to the session handler.
func route(r *http.Request, body []byte) (stateless bool, e *rpcError) {
	if r.Header.Get("Mcp-Session-Id") != "" {
		return false, nil // a 2025-11-25 session's request
	}
	var p peeked
	if json.Unmarshal(body, &p) != nil {
		hv := r.Header.Get("Mcp-Protocol-Version")
		return modern(hv), nil // not one JSON-RPC message: the handler of its header says how it is wrong
	}
	hv := r.Header.Get("Mcp-Protocol-Version")
	mv, metaPresent, mvOK := p.metaVersion()
	if p.Method == "initialize" {
		if modern(hv) || (mvOK && modern(mv)) {
			return false, newRPCError(http.StatusNotFound, p.ID, jsonrpc.CodeMethodNotFound, nil,
				"initialize is not a method of %s (every request carries its version and capabilities in _meta); a 2025-11-25 client sends it without the %s header", ProtocolModern, ProtocolModern)
		}
		return false, nil
	}
	if !metaPresent {
		switch {
		case hv != "" && !supported(hv):
			return false, unsupportedVersion(p.ID, hv)
		case !p.request():
			return modern(hv), nil // a notification: no _meta to check
		case modern(hv):
			return false, checkMeta(&p) // says what is missing
		case hv != "":
			return false, nil // a legacy version without a session: the session handler refuses it
		}
		return false, noMeta(p.ID, "Mcp-Session-Id header")
	}
	if mvOK && hv != "" && hv != mv {
		// The headers are what intermediaries route on: a mismatch is
		// refused before the version is judged.
		return false, newRPCError(http.StatusBadRequest, p.ID, codeHeaderMismatch, nil,
			"header mismatch: the MCP-Protocol-Version header %q differs from params._meta[%q] %q", hv, sdk.MetaKeyProtocolVersion, mv)
	}
	if e := checkMeta(&p); e != nil {
		return false, e
	}
	v := mv
	if !modern(v) {
		return false, nil
	}
	if e := checkHeaders(r, &p, v); e != nil {
		return false, e
	}
	return true, nil
}

// writeRPCError answers an HTTP request with e.
func writeRPCError(w http.ResponseWriter, e *rpcError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_, _ = w.Write(e.bytes())
}

// modernLines is a stdio stream whose lines are checked as route checks
// an HTTP request: a request naming a version we do not speak, or with
// malformed per-request fields, or (before initialize) with no _meta at
// all, is answered with the error on out and never reaches the SDK; so
// is a request of the tasks extension, with its answer.
type modernLines struct {
	s           *Server
	r           *bufio.Reader
	c           io.Closer
	out         io.Writer
	line        []byte
	err         error
	initialized bool
}

func (s *Server) newModernLines(r io.ReadCloser, out io.Writer) *modernLines {
	return &modernLines{s: s, r: bufio.NewReaderSize(r, 64<<10), c: r, out: out}
}

// Read implements io.Reader.
func (m *modernLines) Read(p []byte) (int, error) {
	for len(m.line) == 0 {
		if m.err != nil {
			return 0, m.err
		}
		m.line, m.err = m.next()
		line := bytes.TrimSpace(m.line)
		if e := m.check(line); e != nil {
			_, _ = m.out.Write(append(e.bytes(), '\n'))
			m.line = nil
		} else if _, answer, ok := m.s.serveModernTask(line); ok {
			_, _ = m.out.Write(append(answer, '\n'))
			m.line = nil
		}
	}
	n := copy(p, m.line)
	m.line = m.line[n:]
	return n, nil
}

// next reads one line; a line longer than the SDK takes is passed on in
// parts, unchecked, for the SDK to refuse.
func (m *modernLines) next() ([]byte, error) {
	var line []byte
	for {
		chunk, err := m.r.ReadSlice('\n')
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull && len(line) <= sdk.DefaultMaxLineLength {
			continue
		}
		return line, err
	}
}

// check returns the error to answer a line with, or nil to pass it on.
// A line after initialize without the _meta key costs one search.
func (m *modernLines) check(line []byte) *rpcError {
	hasMeta := bytes.Contains(line, []byte(sdk.MetaKeyProtocolVersion))
	if len(line) == 0 || (m.initialized && !hasMeta) {
		return nil
	}
	var p peeked
	if json.Unmarshal(line, &p) != nil || !p.request() {
		return nil // the SDK answers malformed JSON-RPC; notifications need no _meta
	}
	if p.Method == "initialize" {
		m.initialized = true
		return nil
	}
	if _, present, _ := p.metaVersion(); present {
		return checkMeta(&p)
	}
	if !m.initialized {
		return noMeta(p.ID, "initialize on this stream")
	}
	return nil
}

// Close closes the underlying stream.
func (m *modernLines) Close() error { return m.c.Close() }

// modernCall is the one shape of 2026-07-28 tools/call the fast path
// takes: name, arguments and the per-request fields only (no progress
// token, log level or trace context), decoded strictly.
type modernCall struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      jsontext.Value `json:"id"`
	Method  string         `json:"method"`
	Params  struct {
		Name      string         `json:"name"`
		Arguments jsontext.Value `json:"arguments"`
		Meta      struct {
			Version      string         `json:"io.modelcontextprotocol/protocolVersion"`
			Capabilities jsontext.Value `json:"io.modelcontextprotocol/clientCapabilities"`
			ClientInfo   jsontext.Value `json:"io.modelcontextprotocol/clientInfo,omitzero"`
		} `json:"_meta"`
	} `json:"params"`
}

// plainModern decodes a 2026-07-28 tools/call the fast path can answer:
// a listed tool, and not one the client may get as a task (a client
// declaring the tasks extension calling an async tool).
func (s *Server) plainModern(msg []byte) (plainRequest, bool) {
	var c modernCall
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
	if !ok || s.approves(tool) || (bytes.Contains(c.Params.Meta.Capabilities, []byte(extTasks)) && s.async(tool)) {
		return plainRequest{}, false
	}
	return plainRequest{id: json.RawMessage(c.ID), key: key, name: c.Params.Name, tool: tool, args: json.RawMessage(c.Params.Arguments)}, true
}

// async reports whether the tool's calls are long (its manifest's async).
func (s *Server) async(id string) bool {
	for _, t := range s.h.Tools(host.Query{}) {
		if t.ToolID == id {
			return t.Async
		}
	}
	return false
}

// serveFastModern answers a 2026-07-28 request of the tasks extension
// (modern_tasks.go) or a tools/call on the fast path (route has checked
// its headers and _meta), and reports whether it did.
func (s *Server) serveFastModern(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if status, answer, ok := s.serveModernTask(body); ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(answer)
		return true
	}
	if s.noFast || r.Header.Get("Origin") != "" || !isJSON(r.Header.Get("Content-Type")) ||
		!acceptsBoth(r.Header.Values("Accept")) || rebinding(r) {
		return false
	}
	req, ok := s.plainModern(body)
	if !ok {
		return false
	}
	// Each HTTP request is its own stateless call: its key cannot clash
	// with a session's.
	res, err := s.runFast(r.Context(), "modern:"+r.RemoteAddr, req)
	if err == nil {
		res, err = s.modernResult(res)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(fastAnswer(req.id, res, err))
	return true
}

// modernResult makes a call's result one of 2026-07-28: the server's
// identity in _meta and resultType complete, as the SDK sends them.
func (s *Server) modernResult(res json.RawMessage) (json.RawMessage, error) {
	// resultJSON's answers open with content (a success) or with _meta (a
	// failure): the fields are spliced in, not decoded and encoded again.
	const content, metaOpen = `{"content":`, `{"_meta":{`
	if bytes.HasPrefix(res, []byte(content)) || bytes.HasPrefix(res, []byte(metaOpen)) {
		out := make([]byte, 0, len(res)+len(s.info)+80)
		if bytes.HasPrefix(res, []byte(content)) {
			out = append(out, `{"_meta":{"`+sdk.MetaKeyServerInfo+`":`...)
			out = append(out, s.info...)
			out = append(out, "},"...)
			out = append(out, res[1:len(res)-1]...)
		} else {
			out = append(out, metaOpen+`"`+sdk.MetaKeyServerInfo+`":`...)
			out = append(out, s.info...)
			out = append(out, ',')
			out = append(out, res[len(metaOpen):len(res)-1]...)
		}
		return append(out, `,"resultType":"complete"}`...), nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(res, &m); err != nil {
		return nil, err
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := m["_meta"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, err
		}
	}
	meta[sdk.MetaKeyServerInfo] = s.info
	var err error
	if m["_meta"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	m["resultType"] = json.RawMessage(`"complete"`)
	return json.Marshal(m)
}

// cacheHints are the cache fields of list and discover results: private
// (what a client sees depends on its policy and, on serve, its tenant)
// and stale at once (the catalogue changes when a toolpack does; clients
// of the session revision hear of it by list_changed).
func cacheHints(_ context.Context, _ sdk.Request, c *sdk.Cacheable) {
	c.TTLMs, c.CacheScope = 0, "private"
}

// requestVersion is the protocol version a request declares in _meta, or
// "" when it declares none.
func requestVersion(req sdk.Request) string {
	if req == nil {
		return ""
	}
	// A request without params holds a typed nil.
	p := req.GetParams()
	if p == nil || reflect.ValueOf(p).IsNil() {
		return ""
	}
	v, _ := p.GetMeta()[sdk.MetaKeyProtocolVersion].(string)
	return v
}

// modernEdit makes the results of a 2026-07-28 request follow that
// revision where the session revision's additions (tasks.go) differ:
// server/discover advertises tasks as the extension, not the 2025-11-25
// capability, and tools carry no execution.taskSupport (the server, not
// the client, decides when a call becomes a task).
func modernEdit(req sdk.Request, res sdk.Result) sdk.Result {
	if res == nil || !modern(requestVersion(req)) {
		return res
	}
	switch req.(type) {
	case *sdk.ServerRequest[*sdk.DiscoverParams]:
		return modernView{res, modernCapabilities}
	case *sdk.ListToolsRequest:
		return modernView{res, noTaskSupport}
	}
	return res
}

// modernView is a result whose JSON is edited when it is sent. It
// embeds the result, so the SDK's later touches (serverInfo in _meta)
// still reach it; resultType is written here, as the SDK cannot set it
// through the wrapper.
type modernView struct {
	sdk.Result
	edit func(map[string]json.RawMessage) error
}

// MarshalJSON applies the edit and sets resultType complete.
func (v modernView) MarshalJSON() ([]byte, error) {
	return edited(v.Result, func(m map[string]json.RawMessage) error {
		if err := v.edit(m); err != nil {
			return err
		}
		m["resultType"] = json.RawMessage(`"complete"`)
		return nil
	})
}

// modernCapabilities replaces the session revision's tasks capability by
// the tasks extension.
func modernCapabilities(m map[string]json.RawMessage) error {
	var caps map[string]json.RawMessage
	if err := json.Unmarshal(m["capabilities"], &caps); err != nil {
		return err
	}
	delete(caps, "tasks")
	ext := map[string]json.RawMessage{}
	if raw, ok := caps["extensions"]; ok {
		if err := json.Unmarshal(raw, &ext); err != nil {
			return err
		}
	}
	ext[extTasks] = json.RawMessage(`{}`)
	var err error
	if caps["extensions"], err = json.Marshal(ext); err != nil {
		return err
	}
	m["capabilities"], err = json.Marshal(caps)
	return err
}

// noTaskSupport drops execution (taskSupport, the only member the server
// sets) from every listed tool.
func noTaskSupport(m map[string]json.RawMessage) error {
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal(m["tools"], &tools); err != nil {
		return err
	}
	for _, t := range tools {
		delete(t, "execution")
	}
	var err error
	m["tools"], err = json.Marshal(tools)
	return err
}
