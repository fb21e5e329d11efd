package serve

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/agenthost/agenthost/host/approval"
)

// The HTTP face of the approval broker (host/approval): the calls of a
// tenant that wait for a person's decision, and the answers. The routes
// take the admin scope: the token that makes calls (call) does not
// approve them. The operator scope sees and answers every tenant's.

// ApprovalList is the answer of GET /v1/approvals.
type ApprovalList struct {
	Approvals []approval.Request `json:"approvals"`
}

// ApprovalDecision is the body of POST /v1/approvals/{id}.
type ApprovalDecision struct {
	// Decision is "allow-once", "allow" or "deny".
	Decision string `json:"decision"`
	// Minutes is how long an "allow" lasts (default 15, at most a day);
	// only with "allow".
	Minutes int `json:"minutes,omitempty"`
}

// ApprovalAnswer is the answer of POST /v1/approvals/{id}: 200 with the
// decision recorded, or 409 when the request had been decided already,
// with that first decision (and error CONFLICT).
type ApprovalAnswer struct {
	Approval approval.Record `json:"approval"`
	Error    *ErrorDetail    `json:"error,omitempty"`
}

// moreResponses are the answers besides 200 and the error body that the
// OpenAPI document lists, by "METHOD path".
var moreResponses = map[string]map[string]struct {
	desc string
	body any
}{
	"POST /v1/approvals/{id}": {
		"409": {"the request was decided already (or expired, or its caller gave up): the first decision", ApprovalAnswer{}},
		"404": {"no such request for this tenant (another tenant's id answers alike)", ErrorBody{}},
		"400": {"an unknown decision, minutes out of bounds or with another decision, unknown fields", ErrorBody{}},
	},
}

// approvalTenants are the tenants whose approvals the caller sees: its
// own, or every tenant for the operator scope.
func (s *Server) approvalTenants(c *call) []string {
	if c.p.may(ScopeOperator) {
		names := make([]string, 0, len(s.o.Tenants))
		for name := range s.o.Tenants {
			names = append(names, name)
		}
		sort.Strings(names)
		return names
	}
	return []string{c.p.Tenant}
}

// brokerOf is the broker of a tenant's host; nil when it has none (no
// approve rules).
func (s *Server) brokerOf(tenant string) *approval.Broker {
	t := s.o.Tenants[tenant]
	if t == nil || t.Host == nil {
		return nil
	}
	return t.Host.Approvals()
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request, c *call) {
	writeJSON(w, http.StatusOK, ApprovalList{Approvals: s.pendingOf(s.approvalTenants(c))})
}

// pendingOf lists the tenants' pending requests, oldest first.
func (s *Server) pendingOf(tenants []string) []approval.Request {
	out := []approval.Request{}
	for _, name := range tenants {
		if b := s.brokerOf(name); b != nil {
			out = append(out, b.Pending(name)...)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}

func (s *Server) decideApproval(w http.ResponseWriter, r *http.Request, c *call) {
	var body ApprovalDecision
	if !readJSON(w, r, &body, true) {
		return
	}
	d, err := approval.ParseDecision(body.Decision)
	if err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENTS", err.Error())
		return
	}
	id := r.PathValue("id")
	by := c.p.Tenant + "/" + c.p.Subject
	if c.p.may(ScopeOperator) && c.p.Tenant == "" {
		by = "operator/" + c.p.Subject
	}
	for _, name := range s.approvalTenants(c) {
		b := s.brokerOf(name)
		if b == nil {
			continue
		}
		rec, first, err := b.Decide(name, id, d, body.Minutes, by)
		switch {
		case errors.Is(err, approval.ErrNotFound):
			continue
		case err != nil:
			writeError(w, http.StatusBadRequest, "INVALID_ARGUMENTS", err.Error())
			return
		case !first:
			writeJSON(w, http.StatusConflict, ApprovalAnswer{Approval: rec, Error: &ErrorDetail{Code: "CONFLICT",
				Message: fmt.Sprintf("the request was decided already: %s by %s at %s", rec.Decision, orNobody(rec.By), rec.At.UTC().Format(time.RFC3339))}})
			return
		}
		writeJSON(w, http.StatusOK, ApprovalAnswer{Approval: rec})
		return
	}
	// Unknown and another tenant's IDs answer alike.
	writeError(w, http.StatusNotFound, "NOT_FOUND", "no such approval request")
}

func orNobody(by string) string {
	if by == "" {
		return "nobody (it expired or its caller gave up)"
	}
	return by
}

// approvalEvents streams the caller's tenant's approval events (every
// tenant's for the operator) as server-sent events, "pending" and
// "decided", until the client goes. A client that falls behind is cut
// off and should reconnect and re-read GET /v1/approvals.
func (s *Server) approvalEvents(w http.ResponseWriter, r *http.Request, c *call) {
	tenants := s.approvalTenants(c)
	type stream struct {
		ch   <-chan approval.Event
		stop func()
	}
	var streams []stream
	defer func() {
		for _, st := range streams {
			st.stop()
		}
	}()
	seen := map[*approval.Broker]bool{}
	for _, name := range tenants {
		b := s.brokerOf(name)
		if b == nil || seen[b] {
			continue
		}
		seen[b] = true
		sub := name
		if len(tenants) > 1 {
			sub = "" // the operator: one subscription per broker, all tenants
		}
		ch, stop, err := b.Subscribe(sub)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, "UNAVAILABLE", err.Error())
			return
		}
		streams = append(streams, stream{ch, stop})
	}
	merged := make(chan approval.Event)
	lost := make(chan struct{}, len(streams))
	done := make(chan struct{})
	defer close(done)
	for _, st := range streams {
		go func() {
			for ev := range st.ch {
				select {
				case merged <- ev:
				case <-done:
					return
				}
			}
			lost <- struct{}{} // dropped as too slow (or stopped)
		}()
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	sendEvent(w, "ready", ApprovalList{Approvals: s.pendingOf(tenants)})
	allowed := map[string]bool{}
	for _, t := range tenants {
		allowed[t] = true
	}
	keepAlive := time.NewTicker(25 * time.Second)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-lost:
			return // the client reconnects and reads the list again
		case <-keepAlive.C:
			_, _ = fmt.Fprint(w, ": keep-alive\n\n")
			flush()
		case ev := <-merged:
			if !allowed[ev.Request.Tenant] {
				continue
			}
			sendEvent(w, ev.Kind, ev)
		}
	}
}
