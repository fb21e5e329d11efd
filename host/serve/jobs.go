package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/jobs"
	"github.com/agenthost/agenthost/host/store"
)

// The HTTP face of the job engine (host/jobs): asynchronous calls,
// /v1/jobs, their events, and the limits' answers. The engine runs every
// tenant's calls, synchronous or not, HTTP or MCP, under one limit.

// JobRef is the answer of an asynchronous call (202).
type JobRef struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Tool   string `json:"tool"`
}

// JobList is the answer of GET /v1/jobs.
type JobList struct {
	Jobs []store.Job `json:"jobs"`
	// Next is the cursor of the next page ("" on the last).
	Next string `json:"next,omitempty"`
}

// runTool is the engine's run function: a tenant's call on its host, or
// through Remote.
func (s *Server) runTool(ctx context.Context, tenant, tool string, args json.RawMessage) (abi.Envelope, error) {
	t := s.o.Tenants[tenant]
	if t == nil {
		return abi.Envelope{}, fmt.Errorf("no tenant %q", tenant)
	}
	env, err := s.run(ctx, t, tenant, tool, args)
	if err == nil {
		s.metrics.call(&call{p: Principal{Tenant: tenant}, tenant: t}, env)
	}
	return env, err
}

// jobFailed answers an error of the engine: 404 for a job the tenant
// does not have (another tenant's included), 409 for an idempotency key
// reused for another call, 429 with Retry-After past the tenant's
// limits, 503 while draining or without a lease.
func jobFailed(w http.ResponseWriter, err error) {
	var lim *jobs.LimitError
	var un *jobs.UnavailableError
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no such job")
	case errors.Is(err, jobs.ErrConflict):
		writeError(w, http.StatusConflict, "CONFLICT", "the Idempotency-Key was used for another call (another tool or other arguments)")
	case errors.As(err, &lim):
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(lim.RetryAfter.Seconds()))))
		writeError(w, http.StatusTooManyRequests, "TOO_MANY_REQUESTS", lim.Error())
	case errors.Is(err, jobs.ErrDraining):
		writeError(w, http.StatusServiceUnavailable, "DRAINING", "the server is shutting down")
	case errors.As(err, &un):
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, "UNAVAILABLE", un.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "the request ended before a place was free")
	default:
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENTS", err.Error())
	}
}

// startJob starts the call as a job and answers 202 at once; a retry
// with the same Idempotency-Key answers the same job.
func (s *Server) startJob(w http.ResponseWriter, r *http.Request, c *call, id string, args json.RawMessage) {
	t, err := c.tenant.Host.Tool(id)
	if err != nil {
		writeError(w, http.StatusNotFound, "UNKNOWN_TOOL", err.Error())
		return
	}
	j, err := s.jobs.Start(r.Context(), c.p.Tenant, jobs.Request{Tool: t.ToolID, Args: args, Key: r.Header.Get("Idempotency-Key"), Origin: "http"})
	if err != nil {
		jobFailed(w, err)
		return
	}
	w.Header().Set("Location", "/v1/jobs/"+j.ID)
	writeJSON(w, http.StatusAccepted, JobRef{ID: j.ID, Status: j.Status, Tool: j.Tool})
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request, c *call) {
	j, err := s.jobs.Get(r.Context(), c.p.Tenant, r.PathValue("id"))
	if err != nil {
		jobFailed(w, err)
		return
	}
	writeJSON(w, http.StatusOK, j)
}

// listJobs pages through the tenant's jobs, oldest first (?after= the
// last ID of the page before, ?limit=).
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request, c *call) {
	limit := jobs.MaxListPage
	if q := r.URL.Query().Get("limit"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 || n > jobs.MaxListPage {
			writeError(w, http.StatusBadRequest, "INVALID_ARGUMENTS", fmt.Sprintf("limit must be a number from 1 to %d", jobs.MaxListPage))
			return
		}
		limit = n
	}
	list, err := s.jobs.List(r.Context(), c.p.Tenant, jobs.ListOptions{After: r.URL.Query().Get("after"), Limit: limit})
	if err != nil {
		jobFailed(w, err)
		return
	}
	out := JobList{Jobs: list}
	if len(list) == limit {
		out.Next = list[len(list)-1].ID
	}
	writeJSON(w, http.StatusOK, out)
}

// cancelJob stops a running job (the guest is stopped; its result is
// CANCELLED) and answers with the job once it has ended; an ended job is
// answered as it is.
func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request, c *call) {
	j, err := s.jobs.Cancel(r.Context(), c.p.Tenant, r.PathValue("id"))
	if err != nil {
		jobFailed(w, err)
		return
	}
	writeJSON(w, http.StatusOK, j)
}

// jobEvents streams a job as server-sent events: "status" at each
// change, then "result" with the job once it has its final answer.
func (s *Server) jobEvents(w http.ResponseWriter, r *http.Request, c *call) {
	ev, err := s.jobs.Events(r.Context(), c.p.Tenant, r.PathValue("id"))
	if err != nil {
		jobFailed(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	for j := range ev {
		if j.Ended() {
			sendEvent(w, "result", j)
			return
		}
		sendEvent(w, "status", JobRef{ID: j.ID, Status: j.Status, Tool: j.Tool})
	}
}

func sendEvent(w http.ResponseWriter, event string, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
