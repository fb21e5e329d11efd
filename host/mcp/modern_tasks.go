package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host/jobs"
	"github.com/agenthost/agenthost/host/store"
)

// The tasks extension of the 2026-07-28 revision (io.modelcontextprotocol/
// tasks), at the edges like the rest of the revision's additions: the
// server, not the client, decides when a call becomes a task. A
// tools/call of a tool whose manifest says async, from a client that
// declares the extension in that request's capabilities, is answered at
// once with a task (resultType "task"); tasks/get polls it (the call's
// result inlined once it has ended), tasks/update is acknowledged (no
// tool asks for input mid-call, so no input is ever outstanding) and
// tasks/cancel stops the call. The tasks are jobs of the server's engine
// as the session revision's are (tasks.go), so Drain, Wait, TaskDone and
// Options.Jobs cover them alike; they belong to no session (a stateless
// client has none): the task ID, a random handle, is the reference, as a
// job's ID is on serve's /v1/jobs, within the tenant.

// extTasks names the tasks extension of the 2026-07-28 revision.
const extTasks = "io.modelcontextprotocol/tasks"

// taskRequest is what the extension's edge reads of a 2026-07-28 request.
type taskRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		TaskID    *string         `json:"taskId"`
		Meta      struct {
			Version      string `json:"io.modelcontextprotocol/protocolVersion"`
			Capabilities struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
			} `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	} `json:"params"`
}

// modernTaskInfo is a task as the extension shows it (DetailedTask, and
// CreateTaskResult with resultType "task").
type modernTaskInfo struct {
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          int64           `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
	Result         json.RawMessage `json:"result,omitempty"`
	Meta           map[string]any  `json:"_meta"`
}

// serveModernTask answers a 2026-07-28 request that belongs to the tasks
// extension: its status and JSON-RPC answer, and whether it was one.
func (s *Server) serveModernTask(body []byte) (int, []byte, bool) {
	if !bytes.Contains(body, []byte(`"tasks/`)) && !bytes.Contains(body, []byte(extTasks)) {
		return 0, nil, false // the commonest request costs two searches
	}
	var r taskRequest
	if json.Unmarshal(body, &r) != nil || !modern(r.Params.Meta.Version) {
		return 0, nil, false
	}
	_, declared := r.Params.Meta.Capabilities.Extensions[extTasks]
	switch r.Method {
	case "tools/call":
		s.mu.Lock()
		tool, ok := s.ids[r.Params.Name]
		s.mu.Unlock()
		if !declared || !ok || !s.async(tool) {
			return 0, nil, false
		}
		var created any
		e, j, err := s.startJob(context.Background(), originModern, tool, r.Params.Arguments)
		if err == nil {
			created = s.modernInfo(e, j, "task")
		}
		return http.StatusOK, s.taskAnswer(r.ID, created, err), true
	case "tasks/result", "tasks/list":
		// The session revision's methods, removed from the extension: its
		// handlers (tasks.go) must not answer a 2026-07-28 request.
		e := newRPCError(http.StatusNotFound, r.ID, jsonrpc.CodeMethodNotFound, nil,
			"%s is not a method of the %s extension in %s: poll with tasks/get", r.Method, extTasks, ProtocolModern)
		return e.status, e.bytes(), true
	case "tasks/get", "tasks/update", "tasks/cancel":
	default:
		return 0, nil, false
	}
	if !declared {
		e := newRPCError(http.StatusBadRequest, r.ID, codeMissingCapability,
			map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{extTasks: map[string]any{}}}},
			"%s needs the %s extension in the request's client capabilities", r.Method, extTasks)
		return e.status, e.bytes(), true
	}
	if r.Params.TaskID == nil || *r.Params.TaskID == "" {
		e := newRPCError(http.StatusBadRequest, r.ID, jsonrpc.CodeInvalidParams, nil, "%s needs params.taskId", r.Method)
		return e.status, e.bytes(), true
	}
	ctx, cancel := context.WithTimeout(context.Background(), modernCancelWait)
	defer cancel()
	e, j, err := s.taskJob(ctx, originModern, *r.Params.TaskID)
	if err != nil {
		var je *jsonrpc.Error
		errors.As(err, &je)
		e := newRPCError(http.StatusBadRequest, r.ID, je.Code, nil, "%s", je.Message)
		return e.status, e.bytes(), true
	}
	switch r.Method {
	case "tasks/get":
		return http.StatusOK, s.taskAnswer(r.ID, s.modernInfo(e, j, "complete"), nil), true
	case "tasks/cancel":
		// A task that has ended keeps its answer: the cancel is a no-op.
		if !j.Ended() {
			if _, err := e.Cancel(ctx, s.tasks.tenant, j.ID); err != nil {
				return http.StatusOK, s.taskAnswer(r.ID, nil, err), true
			}
		}
	}
	// tasks/update: no input is ever outstanding, so every response is
	// for a key that is not, which the extension says to ignore.
	return http.StatusOK, s.taskAnswer(r.ID, map[string]any{"resultType": "complete", "_meta": map[string]any{sdk.MetaKeyServerInfo: s.info}}, nil), true
}

// modernCancelWait bounds how long a tasks/cancel waits for the call to
// stop.
const modernCancelWait = 30 * time.Second

// taskAnswer is the JSON-RPC answer to id with result, or the internal
// error err.
func (s *Server) taskAnswer(id json.RawMessage, result any, err error) []byte {
	if err != nil {
		var je *jsonrpc.Error
		if !errors.As(err, &je) {
			je = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		return (&rpcError{id: id, err: je}).bytes()
	}
	b, err := json.Marshal(result)
	return fastAnswer(id, b, err)
}

// modernInfo is j as the extension shows it. A call that ended with
// isError is completed with that result: the extension keeps failed for
// JSON-RPC errors, which a call never ends with here.
func (s *Server) modernInfo(e *jobs.Engine, j store.Job, resultType string) modernTaskInfo {
	i := s.taskInfoOf(e, j)
	status, _, res := taskState(j)
	var result json.RawMessage
	if res != nil && status != TaskCancelled {
		status = TaskCompleted
		result, _ = json.Marshal(res)
	}
	return modernTaskInfo{ResultType: resultType, TaskID: i.TaskID, Status: status, StatusMessage: i.StatusMessage,
		CreatedAt: i.CreatedAt, LastUpdatedAt: i.LastUpdatedAt, TTLMs: i.TTL, PollIntervalMs: i.PollInterval, Result: result,
		Meta: map[string]any{sdk.MetaKeyServerInfo: s.info}}
}
