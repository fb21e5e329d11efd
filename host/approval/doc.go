// Package approval makes a risky tool call wait for a person's decision.
//
// The policy's approve rules ([policy.ApproveRule]) name tools by glob and,
// optionally, conditions on the call: the effective grant writes in the
// workspace, reaches a host matching a glob, the call gets a credential,
// an argument matches a glob. [Rules.Match] finds the first rule a [Call]
// matches and the conditions that held (its risks).
//
// A [Broker] holds what the host decides with:
//   - the calls waiting for a decision, bounded per tenant and in all;
//     past either bound a call is refused at once;
//   - the decisions given, so that a second answer meets the first;
//   - the "allow for N minutes" decisions, remembered per tenant for the
//     same tool and the same matched conditions, bounded and expiring.
//
// The host facade calls [Broker.Ask] after a call's effective grant is
// known and before its runner starts. A call that no rule matches never
// reaches the broker.
//
// # How a front-end asks and answers
//
// Front-ends that hold a connection (the HTTP API, the console, the
// terminal, MCP elicitation) let the call block: they see its request
// through [Broker.Subscribe] or [Broker.Pending] (or the per-call
// [WithNotify] hook), show it, and answer with [Broker.Decide](tenant, id,
// decision, minutes, by). The first answer wins; the call's wait ends with
// it, with the rule's timeout (PERMISSION_DENIED saying that no decision
// came within N s) or with the caller's context.
//
// Stateless front-ends (MCP input_required, AG-UI interrupts) must not
// block: they make the call under [NoWait]. A call that needs a decision
// then fails at once with PERMISSION_DENIED (details {"approval": id})
// without running, and the [Deferred] holds a [NeedsApproval]: the
// request to show and State, a string signed by the broker (HMAC-SHA256)
// that binds the answer to the tenant, the tool and the digest of the
// arguments, and expires with the rule's timeout. The client returns
// State with its decision; the front-end makes the same call again under
// [WithAnswer]. The broker checks the signature, the binding and the
// expiry, lets the state answer one call only, and records the decision.
// A client cannot forge an approval for another call, replay one, or use
// it after it expired.
//
// Every decision is a [Record] (ID, decision, who, when, until): the host
// logs it and puts it on the call's receipt.
package approval
