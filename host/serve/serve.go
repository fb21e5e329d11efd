// Package serve is `agenthost serve`: the host over HTTP. Tools (list,
// describe, call), ACTION exec, MCP (Streamable HTTP at /mcp), sessions
// with history, and agent runs streamed as AG-UI events, for one or many
// tenants, each with its own host (policy, workspace, cache), profiles
// and sessions, behind bearer tokens.
package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/budget"
	"github.com/agenthost/agenthost/host/jobs"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/mcp"
	"github.com/agenthost/agenthost/host/profile"
	"github.com/agenthost/agenthost/host/store"
)

// Defaults of Options.
const (
	DefaultMaxBody       = 1 << 20
	DefaultMaxConcurrent = 16
)

// Tenant is one tenant's world.
type Tenant struct {
	Name string
	Host *host.Host
	// Profiles are the agent profiles by ID.
	Profiles map[string]*profile.Profile
	// Provider builds the model provider of a profile (and the model
	// name to ask for).
	Provider func(p *profile.Profile) (llm.Provider, string, error)
}

// Options configure a Server.
type Options struct {
	Tenants map[string]*Tenant
	Auth    *Authenticator
	Store   *store.Store
	Logger  hclog.Logger
	// MaxBody caps a request body (DefaultMaxBody when 0).
	MaxBody int64
	// MaxConcurrent caps a tenant's requests in progress, and its tool
	// calls running at once: synchronous calls, jobs and MCP tasks alike
	// (DefaultMaxConcurrent when 0).
	MaxConcurrent int
	// MaxQueued caps a tenant's calls waiting for one of those places;
	// beyond it the answer is 429 with Retry-After
	// (jobs.DefaultMaxQueued when 0).
	MaxQueued int
	// Budget sizes the budget of each root call (calls in flight, calls
	// in all, wall time) that nested workflows draw from.
	Budget budget.Limits
	// Instance names this server among those sharing the store (a random
	// name when empty): a server restarted under the same name ends its
	// own unfinished jobs at once, others' only when their lease expires.
	Instance string
	// HeaderTimeout bounds how long a client may take to send its request
	// headers (slow-loris clients); DefaultHeaderTimeout when 0.
	HeaderTimeout time.Duration
	// Remote, when set, runs tool calls (direct and jobs) elsewhere (on
	// queue workers) instead of on the tenant's host. An error is the
	// remote side's (saturated, unreachable): the answer is 503.
	Remote func(ctx context.Context, tenant, tool string, args json.RawMessage) (abi.Envelope, error)
	// QueueDepth, when set, reports the calls waiting for a worker (the
	// agenthost_queue_depth gauge).
	QueueDepth func() (int64, error)
	// Collectors are more Prometheus collectors shown at /metrics to the
	// operator scope, with the process's metrics (the queue's count of
	// rejected messages, with Remote).
	Collectors []prometheus.Collector
	// MCPCodeMode adds run_code and search_tools to every tenant's /mcp
	// (mcp.Options.CodeMode; docs/CODEMODE.md).
	MCPCodeMode bool
}

// DefaultHeaderTimeout is Options.HeaderTimeout's default.
const DefaultHeaderTimeout = 10 * time.Second

// HTTPServer is an http.Server for the API with the timeouts that keep
// slow clients from holding connections: headers within HeaderTimeout, a
// request body within a minute, idle connections closed after two. There
// is no write timeout: agent runs stream for as long as they last.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{Handler: s.Handler(), ReadHeaderTimeout: s.o.HeaderTimeout, ReadTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second}
}

// Server serves the API.
type Server struct {
	o        Options
	mux      *http.ServeMux
	draining atomic.Bool
	metrics  *metrics
	mcp      map[string]*mcp.Server
	slots    map[string]chan struct{}
	runs     sync.WaitGroup
	jobs     *jobs.Engine
}

// New builds the server.
func New(o Options) (*Server, error) {
	if len(o.Tenants) == 0 || o.Auth == nil || o.Store == nil {
		return nil, errors.New("serve: tenants, auth and store are required")
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	s := &Server{o: o, mux: http.NewServeMux(), metrics: newMetrics(o.Tenants, o.QueueDepth), mcp: map[string]*mcp.Server{}, slots: map[string]chan struct{}{}}
	e, err := jobs.New(context.Background(), jobs.Options{Store: o.Store, Run: s.runTool, Instance: o.Instance,
		MaxConcurrent: o.MaxConcurrent, MaxQueued: o.MaxQueued, Budget: o.Budget, Logger: o.Logger.Named("jobs")})
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	s.jobs = e
	for _, c := range o.Collectors {
		if err := s.metrics.reg.Register(c); err != nil {
			return nil, fmt.Errorf("serve: metrics: %w", err)
		}
	}
	for name, t := range o.Tenants {
		// An MCP client that cannot be asked (no elicitation) waits for
		// the console or the HTTP API to decide its calls.
		s.mcp[name] = mcp.New(t.Host, mcp.Options{Jobs: e, Tenant: name, CodeMode: o.MCPCodeMode, Approvers: "the console or with POST /v1/approvals/{id} (listed by GET /v1/approvals)"})
		s.slots[name] = make(chan struct{}, o.MaxConcurrent)
		// No client should meet a cold tool: compile and pool every
		// tool now, and again after each reload (/readyz says when).
		t.Host.WarmInBackground()
	}
	for _, rt := range s.routes() {
		s.mux.Handle(rt.Method+" "+rt.Path, s.wrap(rt))
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	return s, nil
}

// Handler is the HTTP handler of the API.
func (s *Server) Handler() http.Handler { return s.mux }

// Drain marks the server as draining: /readyz answers 503, and new agent
// runs, jobs and MCP tasks are refused, while requests in progress
// finish. Call it before http.Server.Shutdown.
func (s *Server) Drain() {
	s.draining.Store(true)
	s.jobs.Drain()
	for _, m := range s.mcp {
		m.Drain()
	}
}

// Interrupt stops the calls still running once the drain timeout has
// passed: a synchronous call answers its client MAY_HAVE_RUN, a job ends
// interrupted (MAY_HAVE_RUN) — never a CANCELLED that would say the call
// did not run. Give the handlers a moment to answer (a second
// http.Server.Shutdown) before the process exits.
func (s *Server) Interrupt() { s.jobs.Interrupt() }

// Wait waits for agent runs, jobs and MCP tasks in progress to end, or
// ctx.
func (s *Server) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.runs.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := s.jobs.Wait(ctx); err != nil {
		return err
	}
	for _, m := range s.mcp {
		if err := m.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Close releases the MCP servers and stops the jobs still running
// (interrupted: they may have run); the hosts and store are the
// caller's.
func (s *Server) Close() {
	for _, m := range s.mcp {
		m.Close()
	}
	s.jobs.Close()
}

// route is one endpoint; the OpenAPI document is generated from the same
// table.
type route struct {
	Method, Path string
	Summary      string
	Scope        string // "" for no auth (health)
	Request      any    // a value of the request body type, or nil
	Response     any    // a value of the response type, or nil
	Stream       bool   // answers with server-sent events
	// Idle marks a long-lived stream that mostly waits (MCP's standalone
	// stream, a job's events): it does not take one of the tenant's
	// request slots, so open streams cannot starve the tenant.
	Idle   bool
	handle func(w http.ResponseWriter, r *http.Request, c *call)
}

// call is what a handler gets besides the request.
type call struct {
	p      Principal
	tenant *Tenant
}

// wrap applies auth, tenancy, the body cap, the concurrency limit,
// metrics and panic safety.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: 200}
		defer func() {
			if v := recover(); v != nil {
				s.o.Logger.Error("handler panicked", "route", rt.Path, "panic", v)
				writeError(sw, http.StatusInternalServerError, "INTERNAL", "internal error")
			}
			s.metrics.request(rt.Method+" "+rt.Path, sw.code, time.Since(start))
		}()
		c := &call{}
		if rt.Scope != "" {
			p, err := s.o.Auth.principal(r)
			if err != nil {
				sw.Header().Set("WWW-Authenticate", s.o.Auth.challenge(err))
				writeError(sw, http.StatusUnauthorized, "UNAUTHORIZED", "a valid bearer token is required: "+err.Error())
				return
			}
			// The operator scope opens the admin routes (every tenant's
			// metrics) and needs no tenant.
			operator := rt.Scope == ScopeAdmin && p.may(ScopeOperator)
			if !p.may(rt.Scope) && !operator {
				sw.Header().Set("WWW-Authenticate", s.o.Auth.scopeChallenge(rt.Scope))
				writeError(sw, http.StatusForbidden, "FORBIDDEN", "the token lacks the scope "+rt.Scope)
				return
			}
			t, ok := s.o.Tenants[p.Tenant]
			if !ok && !operator {
				writeError(sw, http.StatusForbidden, "FORBIDDEN", "the token's tenant is not served")
				return
			}
			c.p, c.tenant = p, t
			if !rt.Idle && ok {
				select {
				case s.slots[p.Tenant] <- struct{}{}:
					defer func() { <-s.slots[p.Tenant] }()
				default:
					sw.Header().Set("Retry-After", "1")
					writeError(sw, http.StatusTooManyRequests, "TOO_MANY_REQUESTS", "too many requests in progress for this tenant")
					return
				}
			}
		}
		r.Body = http.MaxBytesReader(sw, r.Body, s.o.MaxBody)
		rt.handle(sw, r, c)
	})
}

type statusWriter struct {
	http.ResponseWriter
	code    int
	written bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.written {
		w.code, w.written = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.written = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ErrorBody is every error answer: {"error": {"code", "message"}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the code and message of an error answer.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, ErrorBody{ErrorDetail{code, msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// readJSON decodes a JSON request body into v: the content type must be
// JSON, unknown fields are errors (when strict), the body is one JSON
// value and nothing after it but white space, and the body cap applies.
func readJSON(w http.ResponseWriter, r *http.Request, v any, strict bool) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" && !isJSON(ct) {
		writeError(w, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE", "send application/json, not "+ct)
		return false
	}
	dec := json.NewDecoder(r.Body)
	if strict {
		dec.DisallowUnknownFields()
	}
	err := dec.Decode(v)
	if err == nil {
		// A second value would be ignored, and whoever reads the body
		// another way (a proxy, a log) might see it as the request.
		if _, next := dec.Token(); next != io.EOF {
			err = next
			if err == nil {
				err = errors.New("the body holds more than one JSON value")
			}
		}
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "TOO_LARGE", "the body is larger than the limit")
			return false
		}
		writeError(w, http.StatusBadRequest, "INVALID_JSON", "the body is not valid JSON: "+err.Error())
		return false
	}
	return true
}

func isJSON(ct string) bool {
	return len(ct) >= 16 && ct[:16] == "application/json"
}

// run runs a tool call of a tenant: on its host, or through Remote.
func (s *Server) run(ctx context.Context, t *Tenant, tenant, id string, args json.RawMessage) (abi.Envelope, error) {
	if s.o.Remote != nil {
		// The worker's host keeps no history: the receipt is this one's.
		start := time.Now()
		env, err := s.o.Remote(ctx, tenant, id, args)
		if err == nil {
			t.Host.RecordRemote(ctx, id, args, env, start)
		}
		return env, err
	}
	return t.Host.Call(ctx, id, args), nil
}
