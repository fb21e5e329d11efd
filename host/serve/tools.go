package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/jobs"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/mcp"
)

// ToolInfo is a tool as the API lists it.
type ToolInfo struct {
	ID          string          `json:"id"`
	Version     string          `json:"version"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Kind        string          `json:"kind"`
	Tags        []string        `json:"tags"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Output      json.RawMessage `json:"output,omitempty"`
	Idempotent  bool            `json:"idempotent"`
}

// ToolList is the answer of GET /v1/tools.
type ToolList struct {
	Tools []ToolInfo `json:"tools"`
}

// ExecRequest is the body of POST /v1/exec.
type ExecRequest struct {
	// Output is raw model output holding an ACTION block.
	Output string `json:"output"`
}

func infoOf(t *manifest.Tool) ToolInfo {
	tags := t.Tags
	if tags == nil {
		tags = []string{}
	}
	return ToolInfo{ID: t.ToolID, Version: t.Version, Title: t.DisplayName, Description: t.Description, Kind: host.KindOf(t),
		Tags: tags, Parameters: t.Parameters, Output: t.Output, Idempotent: t.Idempotent}
}

func (s *Server) listTools(w http.ResponseWriter, r *http.Request, c *call) {
	out := ToolList{Tools: []ToolInfo{}}
	for _, t := range c.tenant.Host.Tools(host.Query{}) {
		out.Tools = append(out.Tools, infoOf(t))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getTool(w http.ResponseWriter, r *http.Request, c *call) {
	id := r.PathValue("id")
	t, err := c.tenant.Host.Tool(id)
	if err != nil {
		code, status := "UNKNOWN_TOOL", http.StatusNotFound
		var ae *abi.Error
		if asABI(err, &ae) && ae.Code == abi.CodeLoadError {
			code, status = string(ae.Code), http.StatusConflict
		}
		writeError(w, status, code, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, infoOf(t))
}

// callTool answers with the envelope: 200 whatever the tool did (the
// envelope's status says), 404 for an unknown tool, 400 for arguments
// that are not JSON. With ?async=true it answers 202 with a job at once.
func (s *Server) callTool(w http.ResponseWriter, r *http.Request, c *call) {
	async := false
	if q := r.URL.Query(); q.Has("async") {
		if q.Get("async") != "true" && q.Get("async") != "false" {
			writeError(w, http.StatusBadRequest, "INVALID_ARGUMENTS", "async must be true or false")
			return
		}
		async = q.Get("async") == "true"
	}
	var args json.RawMessage
	if !readJSON(w, r, &args, false) {
		return
	}
	id := r.PathValue("id")
	if !r.URL.Query().Has("async") {
		// A tool whose manifest says async answers with a job unless the
		// caller asks otherwise (?async=false).
		if t, err := c.tenant.Host.Tool(id); err == nil && t.Async {
			async = true
		}
	}
	if async {
		s.startJob(w, r, c, id, args)
		return
	}
	env, err := s.jobs.Call(r.Context(), c.p.Tenant, id, args)
	var lim *jobs.LimitError
	switch {
	case errors.As(err, &lim), errors.Is(err, context.Canceled):
		jobFailed(w, err)
		return
	case err != nil:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "UNAVAILABLE", err.Error())
		return
	}
	status := http.StatusOK
	if env.Error != nil && env.Error.Code == abi.CodeUnknownTool {
		status = http.StatusNotFound
	}
	writeJSON(w, status, env)
}

func (s *Server) exec(w http.ResponseWriter, r *http.Request, c *call) {
	var req ExecRequest
	if !readJSON(w, r, &req, true) {
		return
	}
	if strings.TrimSpace(req.Output) == "" {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENTS", "output is empty")
		return
	}
	turn := c.tenant.Host.Exec(r.Context(), req.Output)
	for _, env := range turn.Results {
		s.metrics.call(c, env)
	}
	writeJSON(w, http.StatusOK, turn)
}

// Health is the answer of /healthz and /readyz.
type Health struct {
	Status string `json:"status"`
	// Warm is the tools' background warm-up (/readyz only).
	Warm *Warmth `json:"warm,omitempty"`
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request, c *call) {
	writeJSON(w, http.StatusOK, Health{Status: "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request, c *call) {
	if s.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, Health{Status: "draining"})
		return
	}
	if err := s.o.Store.Ping(r.Context()); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, Health{Status: "store unavailable"})
		return
	}
	if err := s.jobs.Ready(); err != nil {
		// The leases of this server's jobs cannot be renewed: it starts
		// none, lest another server take them for abandoned.
		writeJSON(w, http.StatusServiceUnavailable, Health{Status: "jobs unavailable: " + err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, Health{Status: "ready", Warm: s.warmth()})
}

func (s *Server) mcpHandler(w http.ResponseWriter, r *http.Request, c *call) {
	// Decisions given over MCP are recorded as the token's.
	s.mcp[c.p.Tenant].Handler().ServeHTTP(w, r.WithContext(mcp.WithApprover(r.Context(), approverOf(c.p))))
}

func (s *Server) metricsHandler(w http.ResponseWriter, r *http.Request, c *call) {
	s.metrics.handler(c.p).ServeHTTP(w, r)
}
