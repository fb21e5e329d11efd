package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/approval"
)

// Approvals over MCP. A call that the policy's approve rules match waits
// for a person's decision (host/approval); how the person is asked
// depends on the revision and on what the client declared:
//
//   - 2026-07-28, a client that declares elicitation: the call is made
//     without waiting (approval.NoWait). When it needs a decision, the
//     answer is input_required: one elicitation/create (inputRequests
//     key "approval", a form with the decision and, for "allow", the
//     minutes; the request — tool, arguments, grant, risks, expiry —
//     under _meta "agenthost/approval") and requestState, the broker's
//     signed state. The server keeps nothing: the client retries the same
//     tools/call with inputResponses and requestState, and the call is
//     made again carrying the answer (approval.WithAnswer), which the
//     broker checks against the tenant, the tool, the digest of the
//     arguments, the expiry and its own record of answered states (one
//     state answers one call). A requestState the broker did not sign is
//     refused as invalid params before anything runs.
//   - 2025-11-25, a session whose client declared elicitation: the call
//     waits in the broker like any other (the console and the HTTP API
//     see it and may answer), and the client is asked at once with
//     elicitation/create during the call; the first answer wins.
//   - a client that declared no elicitation: nobody can ask it. When
//     Options.Approvers names where a person can decide (serve: the
//     console and the HTTP API), the call waits there; otherwise it is
//     refused at once. Either refusal says that the tool needs approval
//     and where it can be given.
//
// Decline, cancel and "deny" all deny the call: its result is
// PERMISSION_DENIED with the observation the model reads. Every decision
// is recorded by the broker with who made it: the tenant and subject of
// the HTTP caller (WithApprover, set by serve from the token), else
// "mcp:<client name>" as the client named itself.
//
// Calls of tools the rules name never take the fast paths (fast.go,
// stdio.go): those answer without the SDK, which these rounds need.

// approvalKey is the inputRequests key of the approval question.
const approvalKey = "approval"

// MetaApproval is the _meta key of an elicitation that asks for an
// approval: the request as the broker describes it (ID, tool, redacted
// arguments, their digest, grant summary, risks, expiry).
const MetaApproval = "agenthost/approval"

// approverHeader carries the caller named by WithApprover from serve's
// authenticated request to the tool handler (the SDK hands handlers the
// request's headers). The handler sets or deletes it on every request, so
// a client cannot send its own.
const approverHeader = "Agenthost-Internal-Approver"

type approverKey struct{}

// WithApprover returns a context for an HTTP request to the Handler
// whose caller is who ("<tenant>/<subject>" of its token): the decisions
// that caller gives over MCP are recorded as theirs. Without it a
// decision is recorded as "mcp:<client name>".
func WithApprover(ctx context.Context, who string) context.Context {
	return context.WithValue(ctx, approverKey{}, who)
}

// markApprover puts the caller of r (WithApprover) in the header the
// tool handler reads, after removing whatever the client sent there.
func markApprover(r *http.Request) {
	r.Header.Del(approverHeader)
	if who, _ := r.Context().Value(approverKey{}).(string); who != "" {
		r.Header.Set(approverHeader, who)
	}
}

// approvalRules are the policy's approve rules as the server reads them,
// to keep the calls they name off the fast paths.
type approvalRules struct {
	once  sync.Once
	rules *approval.Rules
}

// approves reports whether some approve rule names the tool id: its
// calls may need a decision.
func (s *Server) approves(id string) bool {
	a := &s.approvals
	a.once.Do(func() {
		if p := s.h.Policy(); p != nil {
			a.rules = approval.NewRules(p.Approve)
		}
	})
	return a.rules.Names(id)
}

// approvalSchema is the form the person answers: the decision and, for
// "allow", how many minutes the same calls run without asking.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"decision":{"type":"string","title":"Decision","description":"allow-once runs this call; allow also runs the same calls for the minutes given; deny refuses it","enum":["allow-once","allow","deny"],"default":"allow-once"},` +
	`"minutes":{"type":"integer","title":"Minutes (allow only)","minimum":1,"maximum":1440}},"required":["decision"]}`)

// callApproved runs req's call of the tool id, which an approve rule
// names, asking for a decision as the revision and the client allow.
func (s *Server) callApproved(ctx context.Context, req *sdk.CallToolRequest, name, id string) (*sdk.CallToolResult, error) {
	who := approver(req)
	caps := req.ClientCapabilities()
	canAsk := caps != nil && caps.Elicitation != nil
	if modern(req.ProtocolVersion()) {
		if req.Params.RequestState != "" {
			a, ok, err := s.answer(req, who)
			if err != nil {
				return nil, err
			}
			if ok {
				return resultOf(name, s.call(approval.WithAnswer(ctx, a), req, id)), nil
			}
			// No answer to the question: ask again.
		}
		if canAsk {
			nctx, d := approval.NoWait(ctx)
			env := s.call(nctx, req, id)
			if need, ok := d.Needed(); ok && refusedFor(env, need.Request.ID) {
				// Content is empty, not absent: the SDK writes a nil one as
				// null, which no client's schema takes.
				return &sdk.CallToolResult{Content: []sdk.Content{}, InputRequests: sdk.InputRequestMap{approvalKey: elicitation(name, need.Request)},
					RequestState: need.State}, nil
			}
			return resultOf(name, env), nil
		}
	} else if canAsk && req.Session != nil {
		ss := req.Session
		// The question goes out on its own goroutine (the notification
		// must not block) and is withdrawn when the call ends, decided
		// here or elsewhere.
		ectx, withdraw := context.WithCancel(ctx)
		defer withdraw()
		ctx = approval.WithNotify(ctx, func(r approval.Request) { go s.elicit(ectx, ss, name, r, who) })
		return resultOf(name, s.call(ctx, req, id)), nil
	}
	// Nobody to ask over MCP.
	if s.approvers == "" {
		ctx, _ = approval.NoWait(ctx)
	}
	env := s.call(ctx, req, id)
	if env.Error != nil && env.Error.Code == abi.CodePermissionDenied && approvalOf(env.Error) != "" {
		where := "no one can decide it on this server (serve it with `agenthost serve`, whose console and HTTP API can, or use a client that supports elicitation)"
		if s.approvers != "" {
			where = "decide it in " + s.approvers
		}
		e := *env.Error
		e.Message += fmt.Sprintf("; this MCP client cannot be asked (it did not declare the elicitation capability): %s", where)
		env.Error = &e
	}
	return resultOf(name, env), nil
}

// answer reads the client's answer of a 2026-07-28 retry: ok false when
// it holds none (the question is asked again); an error, for invalid
// params, when requestState is not one the broker signed.
func (s *Server) answer(req *sdk.CallToolRequest, who string) (approval.Answer, bool, error) {
	b := s.h.Approvals()
	if b == nil {
		return approval.Answer{}, false, nil
	}
	if _, err := b.Open(req.Params.RequestState); err != nil {
		data, _ := json.Marshal(map[string]any{MetaError: abi.Errorf(abi.CodePermissionDenied,
			"requestState was not issued by this server (forged, altered or from another server): make the call again without it")})
		return approval.Answer{}, false, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "invalid params: requestState was not issued by this server", Data: data}
	}
	r, ok := req.Params.InputResponses[approvalKey].(*sdk.ElicitResult)
	if !ok || r == nil {
		return approval.Answer{}, false, nil
	}
	d, minutes := decisionOf(r)
	return approval.Answer{State: req.Params.RequestState, Decision: d, Minutes: minutes, By: who}, true, nil
}

// elicit asks the client of a 2025-11-25 session about request r and
// gives the broker its answer. A client that fails to answer gives none:
// the call keeps waiting for the console, the HTTP API or its timeout.
func (s *Server) elicit(ctx context.Context, ss *sdk.ServerSession, name string, r approval.Request, who string) {
	res, err := ss.Elicit(ctx, elicitation(name, r))
	if err != nil {
		if ctx.Err() == nil { // not withdrawn: the client failed
			s.log.Warn("approval: the MCP client did not answer", "approval", r.ID, "error", err)
		}
		return
	}
	d, minutes := decisionOf(res)
	if b := s.h.Approvals(); b != nil {
		if _, _, err := b.Decide(r.Tenant, r.ID, d, minutes, who); err != nil {
			s.log.Warn("approval: the MCP client's answer", "approval", r.ID, "error", err)
		}
	}
}

// elicitation is the question about request r: a form with the decision,
// a message a person can judge by, and the request under _meta.
func elicitation(name string, r approval.Request) *sdk.ElicitParams {
	var b strings.Builder
	fmt.Fprintf(&b, "Allow the call of %s (%s)?\nArguments: %s", r.Tool, name, compact(r.Arguments))
	if len(r.Risks) > 0 {
		fmt.Fprintf(&b, "\nWhy it needs approval: %s", strings.Join(r.Risks, ", "))
	}
	g := r.Grant
	for _, part := range []struct {
		what string
		list []string
	}{{"reads", g.Read}, {"writes", g.Write}, {"reaches", g.Hosts}, {"gets variables", g.Env}, {"gets credentials", g.Credentials}} {
		if len(part.list) > 0 {
			fmt.Fprintf(&b, "\nIt %s: %s", part.what, strings.Join(part.list, ", "))
		}
	}
	if !r.Expires.IsZero() {
		fmt.Fprintf(&b, "\nAnswer before %s (approval %s).", r.Expires.UTC().Format("15:04:05 MST"), r.ID)
	}
	return &sdk.ElicitParams{Mode: "form", Message: b.String(), RequestedSchema: approvalSchema,
		Meta: sdk.Meta{MetaApproval: r}}
}

// compact is the arguments as one line of JSON.
func compact(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// decisionOf reads an elicitation's answer: accept with a decision (and
// minutes for allow); decline, cancel or an answer without a valid
// decision deny.
func decisionOf(r *sdk.ElicitResult) (approval.Decision, int) {
	if r == nil || r.Action != "accept" {
		return approval.Deny, 0
	}
	s, _ := r.Content["decision"].(string)
	d, err := approval.ParseDecision(s)
	if err != nil {
		return approval.Deny, 0
	}
	minutes := 0
	if d == approval.Allow {
		if m, ok := r.Content["minutes"].(float64); ok && m >= 1 && m == float64(int(m)) {
			minutes = int(m)
		}
	}
	return d, minutes
}

// refusedFor reports whether env is the refusal of the call itself for
// approval id (not of a nested call whose outer call went on).
func refusedFor(env abi.Envelope, id string) bool {
	return env.Error != nil && env.Error.Code == abi.CodePermissionDenied && approvalOf(env.Error) == id
}

// approvalOf is the approval ID in a refusal's details, or "".
func approvalOf(e *abi.Error) string {
	switch d := e.Details.(type) {
	case map[string]any:
		id, _ := d["approval"].(string)
		return id
	case map[string]string:
		return d["approval"]
	}
	return ""
}

// approver names who answers over this request: the HTTP caller serve
// authenticated, else the client by the name it gave.
func approver(req *sdk.CallToolRequest) string {
	if req.Extra != nil && req.Extra.Header != nil {
		if who := req.Extra.Header.Get(approverHeader); who != "" {
			return who
		}
	}
	name := ""
	if ci := req.ClientInfo(); ci != nil {
		name = ci.Name
	}
	return "mcp:" + clientName(name)
}

// clientName is a client's self-given name fit for a record: printable,
// at most 64 characters, "unknown" when empty.
func clientName(n string) string {
	n = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) && r != '/' {
			return r
		}
		return '_'
	}, strings.TrimSpace(n))
	if r := []rune(n); len(r) > 64 {
		n = string(r[:64])
	}
	if n == "" {
		return "unknown"
	}
	return n
}
