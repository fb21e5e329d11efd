package serve

import (
	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/audit"
	"github.com/agenthost/agenthost/host/store"
)

// routes is the endpoint table: the mux and the OpenAPI document are both
// built from it.
func (s *Server) routes() []route {
	return []route{
		{Method: "GET", Path: "/{$}", Summary: "the web console", handle: s.console},
		{Method: "GET", Path: "/console/{file}", Summary: "the web console's files", handle: s.console},
		{Method: "GET", Path: "/v1/audit", Summary: "the audit of the tenant's tools: requested against granted, denials, risk flags", Scope: ScopeCall, Response: audit.Report{}, handle: s.auditHandler},
		{Method: "GET", Path: "/v1/profiles", Summary: "the tenant's agent profiles", Scope: ScopeSessions, Response: ProfileList{}, handle: s.listProfiles},
		{Method: "GET", Path: "/.well-known/oauth-protected-resource", Summary: "OAuth 2.0 protected resource metadata (RFC 9728): the authorization servers whose JWTs this server takes", Response: ProtectedResource{}, handle: s.wellKnown},
		{Method: "GET", Path: "/.well-known/oauth-protected-resource/{path...}", Summary: "the same, for the resource at that path (/mcp)", Response: ProtectedResource{}, handle: s.wellKnown},
		{Method: "GET", Path: "/healthz", Summary: "liveness", Response: Health{}, handle: s.healthz},
		{Method: "GET", Path: "/readyz", Summary: "readiness: 503 while draining, when the store does not answer, or when the jobs' leases cannot be renewed (the status says why)", Response: Health{}, handle: s.readyz},
		{Method: "GET", Path: "/metrics", Summary: "Prometheus metrics: the tenant's series (admin), everything (operator)", Scope: ScopeAdmin, handle: s.metricsHandler},
		{Method: "GET", Path: "/openapi.json", Summary: "this document", Scope: ScopeCall, handle: s.openapi},
		{Method: "GET", Path: "/v1/tools", Summary: "the tools a model may call", Scope: ScopeCall, Response: ToolList{}, handle: s.listTools},
		{Method: "GET", Path: "/v1/tools/{id}", Summary: "one tool", Scope: ScopeCall, Response: ToolInfo{}, handle: s.getTool},
		{Method: "POST", Path: "/v1/tools/{id}/call", Summary: "call a tool with a JSON object of arguments; the envelope says how it went (?async=true: 202 and a job)", Scope: ScopeCall, Request: map[string]any{}, Response: abi.Envelope{}, handle: s.callTool},
		{Method: "GET", Path: "/v1/jobs", Summary: "the tenant's jobs, oldest first, a page at a time (?limit=, ?after= a page's next)", Scope: ScopeCall, Response: JobList{}, handle: s.listJobs},
		{Method: "GET", Path: "/v1/jobs/{id}", Summary: "an asynchronous call: queued, running, done with its envelope, or interrupted (MAY_HAVE_RUN)", Scope: ScopeCall, Response: store.Job{}, handle: s.getJob},
		{Method: "DELETE", Path: "/v1/jobs/{id}", Summary: "cancel a job (CANCELLED, the guest stopped); answers with the ended job, an ended one as it is", Scope: ScopeCall, Response: store.Job{}, handle: s.cancelJob},
		{Method: "GET", Path: "/v1/jobs/{id}/events", Summary: "a job as server-sent events: status at each change, then result", Scope: ScopeCall, Response: store.Job{}, Stream: true, Idle: true, handle: s.jobEvents},
		{Method: "POST", Path: "/v1/exec", Summary: "run the ACTION block of a model's output", Scope: ScopeCall, Request: ExecRequest{}, Response: host.Turn{}, handle: s.exec},
		{Method: "GET", Path: "/v1/sessions", Summary: "the tenant's sessions, the latest activity first, a page at a time (?limit=, ?cursor= a page's next)", Scope: ScopeSessions, Response: store.SessionPage{}, handle: s.listSessions},
		{Method: "GET", Path: "/v1/sessions/{id}/messages", Summary: "a page of the session's messages, oldest first (?limit=, ?before= a seq), user messages with their run's state", Scope: ScopeSessions, Response: MessagePage{}, handle: s.sessionMessages},
		{Method: "GET", Path: "/v1/analytics", Summary: "per-tool analytics of the latest calls: calls, failures by code, p50 / p95 latency, the last failures", Scope: ScopeSessions, Response: store.Analytics{}, handle: s.analytics},
		{Method: "POST", Path: "/v1/sessions", Summary: "start a session with an agent profile", Scope: ScopeSessions, Request: NewSession{}, Response: SessionRef{}, handle: s.newSession},
		{Method: "POST", Path: "/v1/sessions/{id}/messages", Summary: "send a user message; the agent's run streams as AG-UI events", Scope: ScopeSessions, Request: UserMessage{}, Response: AGUIEvent{}, Stream: true, handle: s.postMessage},
		{Method: "GET", Path: "/v1/sessions/{id}/history", Summary: "the session's messages, tool messages with their ui_schema", Scope: ScopeSessions, Response: History{}, handle: s.history},
		{Method: "POST", Path: "/v1/agents/{profile}/runs", Summary: "AG-UI: run the profile's agent on RunAgentInput (threadId is the session)", Scope: ScopeSessions, Request: RunAgentInput{}, Response: AGUIEvent{}, Stream: true, handle: s.agentRun},
		// Approvals (approvals.go) take no request slot: the calls that wait for one hold theirs.
		{Method: "GET", Path: "/v1/approvals", Summary: "the calls of the tenant (every tenant's for the operator) that wait for a person's decision: id, tool, arguments (secrets redacted), grant, risks, created, expires", Scope: ScopeAdmin, Idle: true, Response: ApprovalList{}, handle: s.listApprovals},
		{Method: "POST", Path: "/v1/approvals/{id}", Summary: "decide a waiting call: allow-once, allow (for minutes) or deny; 409 with the first decision when it was decided already, 404 for an unknown or another tenant's id", Scope: ScopeAdmin, Idle: true, Request: ApprovalDecision{}, Response: ApprovalAnswer{}, handle: s.decideApproval},
		{Method: "GET", Path: "/v1/approvals/events", Summary: "the approvals as server-sent events: ready (the pending list), then pending and decided", Scope: ScopeAdmin, Idle: true, Response: ApprovalList{}, Stream: true, handle: s.approvalEvents},
		{Method: "POST", Path: "/mcp", Summary: "MCP (Streamable HTTP)", Scope: ScopeCall, handle: s.mcpHandler},
		{Method: "GET", Path: "/mcp", Summary: "MCP (Streamable HTTP) server-to-client stream", Scope: ScopeCall, Idle: true, handle: s.mcpHandler},
		{Method: "DELETE", Path: "/mcp", Summary: "MCP (Streamable HTTP) session end", Scope: ScopeCall, handle: s.mcpHandler},
	}
}
