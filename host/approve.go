package host

import (
	"context"
	"sync"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/approval"
	"github.com/agenthost/agenthost/host/credential"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/receipt"
)

// approvals is the host's side of the policy's approve rules: the rules,
// prepared on first use, and the broker that holds the calls waiting.
type approvals struct {
	once   sync.Once
	rules  *approval.Rules
	broker *approval.Broker
}

func (h *Host) approvalSetup() *approvals {
	a := &h.approvals
	a.once.Do(func() {
		a.rules = approval.NewRules(h.policy.Approve)
		a.broker = h.opts.Approvals
		if a.broker == nil && a.rules != nil {
			// Only a random key fails, and never in practice: without
			// a broker every matching call is refused below.
			a.broker, _ = approval.NewBroker(approval.Options{})
		}
	})
	return a
}

// Approvals returns the broker holding this host's calls that wait for a
// decision (Options.Approvals, or the host's own when the policy has
// approve rules); nil when there is none.
func (h *Host) Approvals() *approval.Broker { return h.approvalSetup().broker }

// approve asks for a decision when the call matches an approve rule of
// the policy, records it on the call's receipt, and returns the error
// that refuses the call. A host whose policy has
// no rules, or none naming the tool, pays a nil check and a glob match.
func (h *Host) approve(ctx context.Context, t *manifest.Tool, g *policy.Grant, input []byte, rc *receiptCall) *abi.Error {
	a := h.approvalSetup()
	if a.rules == nil || !a.rules.Names(t.ToolID) {
		return nil
	}
	var creds []string
	if t.SecurityContext != nil {
		creds = t.SecurityContext.Credentials
	}
	tenant := h.opts.Tenant
	if tenant == "" {
		tenant = "default"
	}
	m, ok := a.rules.Match(approval.Call{Tenant: tenant, Tool: t.ToolID, Args: input, Grant: g, Credentials: creds})
	if !ok {
		return nil
	}
	if a.broker == nil {
		return abi.Errorf(abi.CodePermissionDenied, "the call of %s needs a person's approval and this host has no approval broker", t.ToolID)
	}
	if rec, ok := a.broker.Remembered(tenant, t.ToolID, m); ok {
		// A remembered "allow": no request to describe.
		h.log.Info("approval", "tool", t.ToolID, "approval", rec.ID, "decision", rec.Decision, "by", rec.By, "reused", true)
		rc.setApproval(receiptApproval(rec))
		return nil
	}
	shown := input
	secrets := make([]string, 0, len(g.Env))
	for _, v := range g.Env {
		secrets = append(secrets, v)
	}
	if r := credential.NewRedactor(secrets, h.liveCredential()); r != nil {
		shown = r.Bytes(append([]byte(nil), input...))
	}
	req := approval.Request{Tenant: tenant, Tool: t.ToolID, Arguments: shown, ArgumentsDigest: approval.Digest(input), Grant: approval.Summarize(g, creds)}
	rec, err := a.broker.Ask(ctx, req, m)
	h.log.Info("approval", "tool", t.ToolID, "approval", rec.ID, "decision", rec.Decision, "by", rec.By, "reused", rec.Reused)
	if rec.ID != "" && rec.Decision != "" {
		rc.setApproval(receiptApproval(rec))
	}
	if err != nil {
		return asABIError(err)
	}
	return nil
}

// receiptApproval is the receipt's reference to the decision: a reused
// "allow" is "auto", an expired request "timeout".
func receiptApproval(r approval.Record) *receipt.Approval {
	d := string(r.Decision)
	switch {
	case r.Reused:
		d = "auto"
	case r.Decision == approval.Expired:
		d = "timeout"
	}
	return &receipt.Approval{ID: r.ID, Decision: d, Tenant: r.Tenant, Subject: r.By, At: r.At.UTC().UnixNano()}
}
