package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/store"
)

// JobRef is the answer of an asynchronous call (202).
type JobRef struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Tool   string `json:"tool"`
}

// jobs tracks the jobs this server runs: their cancel functions and the
// channels closed when each ends.
type jobs struct {
	mu      sync.Mutex
	cancels map[string]context.CancelFunc
	done    map[string]chan struct{}
}

func newJobs() *jobs {
	return &jobs{cancels: map[string]context.CancelFunc{}, done: map[string]chan struct{}{}}
}

// tenantJobs records a tenant's MCP tasks as its jobs: a task's ID is its
// job's, and its envelope is the job's result, as for ?async=true.
type tenantJobs struct {
	st     *store.Store
	tenant string
}

// CreateJob records a running call.
func (j tenantJobs) CreateJob(ctx context.Context, tool string, args json.RawMessage) (string, error) {
	job, err := j.st.CreateJob(ctx, j.tenant, tool, args)
	return job.ID, err
}

// FinishJob stores the call's envelope.
func (j tenantJobs) FinishJob(ctx context.Context, id string, env abi.Envelope) error {
	b, err := json.Marshal(env)
	if err != nil {
		return err
	}
	return j.st.FinishJob(ctx, j.tenant, id, b)
}

// interruptedResult is the envelope of a job whose server stopped
// during the call.
func interruptedResult(tool string) json.RawMessage {
	env := abi.Failure(tool, abi.Errorf(abi.CodeCancelled, "the server stopped during the call; it did not finish"))
	b, _ := json.Marshal(env)
	return b
}

// startJob records a job and runs the call in the background; its result
// is stored when it ends, whatever happens to the client.
func (s *Server) startJob(w http.ResponseWriter, r *http.Request, c *call, id string, args json.RawMessage) {
	if s.draining.Load() {
		writeError(w, http.StatusServiceUnavailable, "DRAINING", "the server is shutting down")
		return
	}
	t, err := c.tenant.Host.Tool(id)
	if err != nil {
		writeError(w, http.StatusNotFound, "UNKNOWN_TOOL", err.Error())
		return
	}
	j, err := s.o.Store.CreateJob(r.Context(), c.p.Tenant, t.ToolID, args)
	if err != nil {
		writeError(w, http.StatusBadRequest, "STORE", err.Error())
		return
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	done := make(chan struct{})
	s.jobs.mu.Lock()
	s.jobs.cancels[j.ID], s.jobs.done[j.ID] = cancel, done
	s.jobs.mu.Unlock()
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		defer close(done)
		defer cancel()
		env, err := s.run(host.WithCallID(ctx, j.ID), c, id, args)
		if err != nil {
			env = abi.Failure(id, abi.Errorf(abi.CodeToolError, "the call could not be run: %s", err.Error()))
		}
		s.metrics.call(c, env)
		b, _ := json.Marshal(env)
		if err := s.o.Store.FinishJob(context.Background(), c.p.Tenant, j.ID, b); err != nil {
			s.o.Logger.Error("storing a job result", "job", j.ID, "error", err)
		}
		s.jobs.mu.Lock()
		delete(s.jobs.cancels, j.ID)
		delete(s.jobs.done, j.ID)
		s.jobs.mu.Unlock()
	}()
	w.Header().Set("Location", "/v1/jobs/"+j.ID)
	writeJSON(w, http.StatusAccepted, JobRef{ID: j.ID, Status: j.Status, Tool: j.Tool})
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request, c *call) {
	j, err := s.o.Store.Job(r.Context(), c.p.Tenant, r.PathValue("id"))
	if err != nil {
		s.jobError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, j)
}

func (s *Server) jobError(w http.ResponseWriter, err error) {
	if err == store.ErrNotFound {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no such job")
		return
	}
	writeError(w, http.StatusInternalServerError, "STORE", err.Error())
}

// cancelJob cancels a running job (the guest is stopped; its result is
// CANCELLED) and answers with the job once it has ended.
func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request, c *call) {
	id := r.PathValue("id")
	if _, err := s.o.Store.Job(r.Context(), c.p.Tenant, id); err != nil {
		s.jobError(w, err)
		return
	}
	s.jobs.mu.Lock()
	cancel, done := s.jobs.cancels[id], s.jobs.done[id]
	s.jobs.mu.Unlock()
	switch {
	case cancel != nil:
		cancel()
		select {
		case <-done:
		case <-r.Context().Done():
			return
		}
	case s.mcp[c.p.Tenant] != nil:
		// A task of the tenant's MCP clients: stopped the same way.
		s.mcp[c.p.Tenant].CancelTask(r.Context(), id)
	}
	j, err := s.o.Store.Job(r.Context(), c.p.Tenant, id)
	if err != nil {
		s.jobError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, j)
}

// jobDone returns a channel closed when the tenant's running job id ends,
// or nil when this server runs no such job: an asynchronous call of the
// HTTP API, or a task of the tenant's MCP clients.
func (s *Server) jobDone(tenant, id string) <-chan struct{} {
	s.jobs.mu.Lock()
	done := s.jobs.done[id]
	s.jobs.mu.Unlock()
	if done == nil && s.mcp[tenant] != nil {
		return s.mcp[tenant].TaskDone(id)
	}
	return done
}

// jobEvents streams a job as server-sent events: "status" now, then
// "result" with the job when it has ended (at once if it had).
func (s *Server) jobEvents(w http.ResponseWriter, r *http.Request, c *call) {
	id := r.PathValue("id")
	j, err := s.o.Store.Job(r.Context(), c.p.Tenant, id)
	if err != nil {
		s.jobError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	send := func(event string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	send("status", JobRef{ID: j.ID, Status: j.Status, Tool: j.Tool})
	if j.Status == store.JobRunning {
		if done := s.jobDone(c.p.Tenant, id); done != nil {
			select {
			case <-done:
			case <-r.Context().Done():
				return
			}
		}
		if j, err = s.o.Store.Job(r.Context(), c.p.Tenant, id); err != nil {
			return
		}
	}
	send("result", j)
}
