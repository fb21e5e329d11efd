// Package mcp serves a host's catalogue as an MCP server, on the official
// Go SDK (github.com/modelcontextprotocol/go-sdk): over stdio
// ([Server.RunStdio]) or as a Streamable HTTP handler ([Server.Handler]).
//
// tools/list holds the tools a model may call (policy-denied ones are
// absent), named by their wire names (core:echo is core__echo), with the
// display name as title, the parameters as inputSchema ({"type":"object"}
// when absent), the output schema for object outputs, annotations derived
// from the effective grant (readOnlyHint: no write and no network;
// destructiveHint: a write grant; openWorldHint: a network grant; each sent
// explicitly; idempotentHint from the manifest's idempotent), and _meta with the tool ID, version and digest. tools/call
// runs the call through the host: success is the compact JSON of the
// output as text plus structuredContent for object outputs; failure is
// isError with the observation text and the error object under _meta. A
// client's notifications/cancelled cancels the call (CANCELLED, the guest
// stopped); a progressToken gets progress notifications; a change of the
// catalogue sends notifications/tools/list_changed. A tools/call with a
// "task" runs as an MCP task: answered at once, then polled with
// tasks/get, awaited with tasks/result, listed, cancelled. Over
// Streamable HTTP, a plain tools/call is answered without the SDK's
// dispatch (the fast path; Options.NoFastPath).
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/jobs"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/observation"
	"github.com/agenthost/agenthost/host/wire"
)

// Options configure a Server. The zero value means the defaults.
type Options struct {
	// Name and Version identify the server to clients (default
	// "agenthost" and "dev").
	Name, Version string
	// Logger receives diagnostics; nil means a null logger.
	Logger hclog.Logger
	// MaxMessageBytes caps one HTTP request body (DefaultMaxMessageBytes
	// when 0): a larger message is answered 413, never read whole.
	MaxMessageBytes int64
	// Jobs, when set, runs every task as a job of Tenant: the task's ID
	// is the job's, the tenant's limits and budget hold, and the result
	// outlives the session and the process (agenthost serve passes its
	// job engine; the job is at /v1/jobs/{id}).
	Jobs   *jobs.Engine
	Tenant string
	// NoFastPath sends every tools/call through the SDK's dispatch and
	// its middleware. By default the Streamable HTTP handler answers a
	// plain tools/call on a session that was answered initialize itself, with the same
	// result and without the SDK's dispatch, which costs more than a
	// small tool's call.
	NoFastPath bool
	// SessionIdle closes a Streamable HTTP session that sent no request
	// for this long (DefaultSessionIdle when 0); MaxSessions caps the
	// sessions open at once (DefaultMaxSessions when 0): an initialize
	// beyond is answered 503 with Retry-After.
	SessionIdle time.Duration
	MaxSessions int
	// CodeMode adds the tools run_code and search_tools (codemode.go):
	// a program that calls the catalogue's tools as functions, and the
	// search of their typed API. Off by default.
	CodeMode bool
	// Approvers says where a person can decide a call that waits for
	// approval when the MCP client cannot be asked (it declared no
	// elicitation): such a call waits there ("the console or POST
	// /v1/approvals/{id}" on serve). Empty: nowhere, and the call is
	// refused at once (approve.go).
	Approvers string
}

// DefaultMaxMessageBytes is Options.MaxMessageBytes's default.
const DefaultMaxMessageBytes = 4 << 20

// Meta keys of a tool's _meta and of a failed call's _meta.
const (
	MetaToolID  = "agenthost/toolId"
	MetaVersion = "agenthost/version"
	MetaDigest  = "agenthost/digest"
	MetaError   = "agenthost/error"
)

// Server is a host's catalogue as an MCP server. It follows the catalogue
// while it lives: Close stops that.
type Server struct {
	h        *host.Host
	srv      *sdk.Server
	log      hclog.Logger
	unsub    func()
	mu       sync.Mutex
	listed   map[string]string // wire name -> "id@version@digest" served now
	ids      map[string]string // wire name -> tool ID served now
	tasks    tasks
	fast     fast
	noFast   bool
	jobs     *jobs.Engine
	tenant   string
	sessions sessions
	maxBody  int64

	httpOnce  sync.Once
	closeOnce sync.Once
	http      http.Handler

	info json.RawMessage   // the server's name and version, in 2026-07-28 results (modern.go)
	apps map[string]string // ui:// URI -> the view served (apps.go); guarded by mu
	code codeTools         // run_code and search_tools (codemode.go); guarded by mu

	approvals approvalRules // the policy's approve rules (approve.go)
	approvers string        // Options.Approvers
}

// New builds the server for h and lists its tools.
func New(h *host.Host, opts Options) *Server {
	if opts.Name == "" {
		opts.Name = "agenthost"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.SessionIdle <= 0 {
		opts.SessionIdle = DefaultSessionIdle
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	s := &Server{h: h, log: log, listed: map[string]string{}, ids: map[string]string{}, apps: map[string]string{}, maxBody: opts.MaxMessageBytes,
		tasks:  tasks{},
		fast:   fast{sessions: map[string]string{}, running: map[fastKey]context.CancelFunc{}},
		noFast: opts.NoFastPath, jobs: opts.Jobs, tenant: opts.Tenant, code: codeTools{on: opts.CodeMode}, approvers: opts.Approvers,
		sessions: sessions{idle: opts.SessionIdle, max: opts.MaxSessions, seen: map[string]time.Time{}, stop: make(chan struct{})}}
	impl := &sdk.Implementation{Name: opts.Name, Version: opts.Version}
	s.info, _ = json.Marshal(impl)
	s.srv = sdk.NewServer(impl, &sdk.ServerOptions{Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true},
		// The SDK answers the lists of both (empty but for MCP Apps' ui://
		// resources), so both are declared.
		Prompts: &sdk.PromptCapabilities{}, Resources: &sdk.ResourceCapabilities{}},
		SetCacheable: cacheHints})
	s.serveTasks()
	s.srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			s.fast.observe(method, req, res, err)
			return modernEdit(req, advertised(res)), err
		}
	})
	s.sync()
	s.unsub = h.Subscribe(func(host.Change) { s.sync() })
	return s
}

// Close stops following the catalogue, cancels the running tasks and
// waits for their calls to end.
func (s *Server) Close() {
	s.unsub()
	s.tasks.close()
	s.closeOnce.Do(func() { close(s.sessions.stop) })
	s.sessions.done.Wait()
}

// SDK returns the underlying SDK server (to add prompts or resources).
func (s *Server) SDK() *sdk.Server { return s.srv }

// RunStdio serves one client on stdin / stdout until it disconnects or ctx
// is done.
func (s *Server) RunStdio(ctx context.Context) error {
	return s.RunIO(ctx, os.Stdin, nopCloser{os.Stdout})
}

// RunIO serves one client over r and w, newline-delimited JSON-RPC as on
// stdio, until it disconnects or ctx is done. It is the SDK's own
// transport, with task-augmented calls renamed line by line before it
// reads them and plain tools/call answered on the fast path (stdio.go).
func (s *Server) RunIO(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	out := &lineWriter{w: w}
	lines := newTaskLines(s.newModernLines(r, out))
	if !s.noFast {
		lines.fast = s.newStdioFast(out)
		defer lines.fast.close()
	}
	return s.srv.Run(ctx, &sdk.IOTransport{Reader: lines, Writer: out})
}

// Run serves one client over t (for tests and embedders); its messages
// pass through a wrapper that renames task-augmented calls.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	return s.srv.Run(ctx, taskTransport{t})
}

// nopCloser is a writer whose Close does nothing (stdout stays open).
type nopCloser struct{ io.Writer }

// Close does nothing.
func (nopCloser) Close() error { return nil }

// Handler serves Streamable HTTP (mount it at /mcp). A request body over
// Options.MaxMessageBytes is refused with 413.
func (s *Server) Handler() http.Handler {
	s.httpOnce.Do(func() {
		s.http = s.newHandler()
		s.sessions.done.Add(1)
		go s.sweepLoop()
	})
	return s.http
}

// newHandler builds the one Streamable HTTP handler of the server (it
// holds the sessions: every request must reach the same one).
func (s *Server) newHandler() http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv }, nil)
	// 2026-07-28 requests need a stateless handler (modern.go); closing a
	// request's stream cancels its call, as the revision says.
	stateless := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv },
		&sdk.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true, MaxRequestBodyBytes: s.maxBody})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > s.maxBody {
			http.Error(w, "the message is larger than the limit", http.StatusRequestEntityTooLarge)
			return
		}
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			s.touch(id)
		}
		markApprover(r) // approve.go
		if r.Method == http.MethodPost {
			b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
			var tooLarge *http.MaxBytesError
			switch {
			case errors.As(err, &tooLarge):
				http.Error(w, "the message is larger than the limit", http.StatusRequestEntityTooLarge)
				return
			case err != nil:
				http.Error(w, "the message could not be read: "+err.Error(), http.StatusBadRequest)
				return
			}
			switch modernReq, e := route(r, b); {
			case e != nil:
				writeRPCError(w, e)
				return
			case modernReq:
				if !s.serveFastModern(w, r, b) {
					r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
					stateless.ServeHTTP(w, r)
				}
				return
			}
			if !s.admitSession(w, r, b) {
				return
			}
			if s.serveFast(w, r, b) {
				return
			}
			if bytes.Contains(b, []byte(`"notifications/cancelled"`)) {
				s.cancelFast(r, b)
			}
			b = taskCallBody(b)
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		}
		h.ServeHTTP(w, r)
	})
}

// sync makes the SDK's tool list match the catalogue: the tools a model
// may call, by wire name. Two tools whose wire names collide are both left
// out (and logged).
func (s *Server) sync() {
	tools := s.h.Tools(host.Query{})
	ids := make([]string, len(tools))
	for i, t := range tools {
		ids[i] = t.ToolID
	}
	tab, err := wire.NewTable(ids)
	if err != nil {
		s.log.Warn("MCP tool names", "error", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]*manifest.Tool{}
	for _, t := range tools {
		if n, ok := tab.Name(t.ToolID); ok {
			want[n] = t
		}
	}
	var gone []string
	for n, key := range s.listed {
		if t, ok := want[n]; !ok || key != t.ToolID+"@"+t.Version+"@"+t.Digest() {
			gone = append(gone, n)
			delete(s.listed, n)
			delete(s.ids, n)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
	}
	for n, t := range want {
		if _, ok := s.listed[n]; ok {
			continue
		}
		st, err := s.toolOf(n, t)
		if err != nil {
			s.log.Warn("MCP tool left out", "tool", t.ToolID, "error", err)
			continue
		}
		s.srv.AddTool(st, s.handler(n, t.ToolID))
		s.listed[n] = t.ToolID + "@" + t.Version + "@" + t.Digest()
		s.ids[n] = t.ToolID
	}
	s.syncApps(want)
	s.syncCode()
}

// toolOf is the MCP definition of t.
func (s *Server) toolOf(name string, t *manifest.Tool) (*sdk.Tool, error) {
	in := json.RawMessage(`{"type":"object"}`)
	if len(t.Parameters) > 0 {
		in = t.Parameters
	}
	st := &sdk.Tool{Name: name, Title: t.DisplayName, Description: t.Description, InputSchema: in,
		Meta: sdk.Meta{MetaToolID: t.ToolID, MetaVersion: t.Version}}
	if d := t.Digest(); d != "" {
		st.Meta[MetaDigest] = "sha256:" + d
	}
	appMeta(name, t, st.Meta)
	if len(t.Output) > 0 {
		var o map[string]any
		if json.Unmarshal(t.Output, &o) == nil && o["type"] == "object" {
			st.OutputSchema = t.Output
		}
	}
	g, err := s.h.Grant(t.ToolID + "@" + t.Version)
	if err != nil {
		return nil, err
	}
	write := false
	for _, r := range g.Write {
		if r.Root != "tmp" {
			write = true
		}
	}
	network := len(g.Hosts) > 0
	readOnly, destructive, openWorld := !write && !network, write, network
	st.Annotations = &sdk.ToolAnnotations{Title: t.DisplayName, ReadOnlyHint: readOnly, DestructiveHint: &destructive,
		OpenWorldHint: &openWorld, IdempotentHint: t.Idempotent}
	return st, nil
}

// handler runs a call of the tool id.
func (s *Server) handler(name, id string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if s.approves(id) {
			return s.callApproved(ctx, req, name, id) // approve.go
		}
		return resultOf(name, s.call(ctx, req, id)), nil
	}
}

// call runs req's call of the tool id, with progress notifications when
// the client sent a progress token.
func (s *Server) call(ctx context.Context, req *sdk.CallToolRequest, id string) abi.Envelope {
	token := req.Params.GetProgressToken()
	progress := func(p float64, msg string) {
		if token != nil && req.Session != nil {
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: p, Total: 1, Message: msg})
		}
	}
	progress(0, "started")
	env := s.callTool(ctx, id, req.Params.Arguments)
	progress(1, string(env.Status))
	return env
}

// resultOf maps an envelope to an MCP result.
func resultOf(name string, env abi.Envelope) *sdk.CallToolResult {
	if env.Status != abi.StatusSuccess && env.Error != nil {
		return &sdk.CallToolResult{
			IsError: true,
			Content: []sdk.Content{&sdk.TextContent{Text: observation.Error(name, env.Error)}},
			Meta:    sdk.Meta{MetaError: env.Error},
		}
	}
	res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(env.Output)}}}
	if isObject(env.Output) {
		res.StructuredContent = json.RawMessage(env.Output)
	}
	return res
}

// isObject reports whether a tool's output is a JSON object. The host
// has checked that the output is JSON, so an object is output that opens
// with a brace.
func isObject(out []byte) bool {
	out = bytes.TrimLeft(out, " \t\r\n")
	return len(out) > 0 && out[0] == '{'
}
