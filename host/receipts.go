package host

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"
	"weak"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/receipt"
	"github.com/agenthost/agenthost/host/schema"
)

// receiptCall gathers what a call's receipt needs while the call runs
// (call.go fills it at each step). It is nil when the host records no
// receipts, and every method is then a no-op: the path without receipts
// costs one nil check.
type receiptCall struct {
	start    time.Time
	args     any    // the arguments as given (for a call refused before coercion)
	input    []byte // the canonical arguments the tool received
	grant    *policy.Grant
	inputs   json.RawMessage
	approval *receipt.Approval
}

// receiptStart begins the receipt of a call when the host records them.
func (h *Host) receiptStart(args any) *receiptCall {
	if h.opts.Receipts == nil {
		return nil
	}
	return &receiptCall{start: time.Now(), args: args}
}

// setInput records the canonical arguments.
func (rc *receiptCall) setInput(input []byte) {
	if rc != nil {
		rc.input = input
	}
}

// setGrant records the effective grant the call runs under.
func (rc *receiptCall) setGrant(g *policy.Grant) {
	if rc != nil {
		rc.grant = g
	}
}

// setInputs records the non-deterministic inputs the runner recorded for
// replay (the clock, random bytes and environment the guest saw).
func (rc *receiptCall) setInputs(inputs json.RawMessage) {
	if rc != nil && len(inputs) > 0 {
		rc.inputs = inputs
	}
}

// setApproval records the decision that let the call run (or refused it).
func (rc *receiptCall) setApproval(a *receipt.Approval) {
	if rc != nil {
		rc.approval = a
	}
}

// receiptEnd builds the call's receipt from env and hands it to the
// sink, which links it into the tenant's chain. A sink that fails is
// logged; the call's answer does not change.
func (h *Host) receiptEnd(ctx context.Context, t *manifest.Tool, rc *receiptCall, env abi.Envelope) {
	h.record(ctx, h.buildReceipt(t, rc, env))
}

// record hands r to the sink; a sink that fails is logged.
func (h *Host) record(ctx context.Context, r *receipt.Receipt) {
	r.Fit()
	if err := h.opts.Receipts.Record(ctx, r); err != nil {
		h.log.Error("the call's receipt was not recorded", "tool", r.Tool, "call_id", r.CallID, "error", err)
	}
}

// buildReceipt makes the receipt of a finished call.
func (h *Host) buildReceipt(t *manifest.Tool, rc *receiptCall, env abi.Envelope) *receipt.Receipt {
	end := time.Now()
	input := rc.input
	if input == nil {
		// Refused before coercion: the arguments as given.
		if rc.args == nil {
			input = []byte("{}")
		} else if b, err := schema.Canonical(rc.args); err == nil {
			input = b
		} else {
			input = []byte("null")
		}
	}
	tenant := h.opts.Tenant
	if tenant == "" {
		tenant = "default"
	}
	r := &receipt.Receipt{
		V:            receipt.Version,
		Tenant:       tenant,
		CallID:       callID(),
		Tool:         t.ToolID,
		ToolVersion:  t.Version,
		Runner:       runnerKey(t),
		Module:       t.Digest(),
		Grant:        grantDigest(rc.grant),
		ArgsDigest:   receipt.Digest(input),
		OutputDigest: receipt.Digest(env.Output),
		Fuel:         env.Usage.Fuel,
		Start:        rc.start.UTC().UnixNano(),
		End:          end.UTC().UnixNano(),
		Status:       string(env.Status),
		Approval:     rc.approval,
	}
	// Payloads past the limit keep their digest only (the call cannot be
	// replayed then); a record must stay readable by verify.
	if len(input) <= receipt.MaxPayload {
		r.Args = input
	}
	if env.Error != nil {
		r.Code = string(env.Error.Code)
	}
	if rc.inputs != nil {
		r.InputsDigest = receipt.Digest(rc.inputs)
		if len(rc.inputs) <= receipt.MaxPayload {
			r.Inputs = rc.inputs
		}
	}
	return r
}

// callID returns 16 random hex digits. An ID names a call, it guards
// nothing (every lookup is scoped by tenant), so the runtime's fast
// generator serves: a getrandom call per call cost microseconds.
func callID() string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], rand.Uint64())
	return hex.EncodeToString(b[:])
}

// grantCodes caches each live grant's canonical encoding and its digest:
// a grant is built once per prepared tool and shared by its calls. An
// entry leaves with its grant.
var grantCodes sync.Map // weak.Pointer[policy.Grant] -> grantCode

type grantCode struct {
	json   []byte
	digest string
}

// grantEncoding returns the grant's canonical encoding (its JSON form:
// fields in declaration order, map keys sorted; the granted variables by
// name only, never their values) and its hex sha256; nil and "" when the
// call never got a grant (refused before it was prepared).
func grantEncoding(g *policy.Grant) ([]byte, string) {
	if g == nil {
		return nil, ""
	}
	key := weak.Make(g)
	if c, ok := grantCodes.Load(key); ok {
		return c.(grantCode).json, c.(grantCode).digest
	}
	b, err := json.Marshal(g)
	if err != nil {
		return nil, ""
	}
	c := grantCode{json: b, digest: receipt.Digest(b)}
	if _, loaded := grantCodes.LoadOrStore(key, c); !loaded {
		runtime.AddCleanup(g, func(k weak.Pointer[policy.Grant]) { grantCodes.Delete(k) }, key)
	}
	return c.json, c.digest
}

// grantDigest is the hex sha256 of the grant's canonical encoding.
func grantDigest(g *policy.Grant) string {
	_, d := grantEncoding(g)
	return d
}

// RunnerRemote is the runner of a receipt for a call another process
// ran (a queue worker): its module and grant were the worker's, so the
// receipt names neither.
const RunnerRemote = "remote"

// RecordRemote records the receipt of a call of tool id that another
// process ran (serve's calls on queue workers) and answered env, started
// at start: the tool and version, the digest of the arguments as this
// host's schema coerces them, of the output, the outcome and the times.
// It does nothing without Options.Receipts or for a tool this host does
// not know.
func (h *Host) RecordRemote(ctx context.Context, id string, args json.RawMessage, env abi.Envelope, start time.Time) {
	if h.opts.Receipts == nil {
		return
	}
	t, err := h.reg.Lookup(id)
	if err != nil {
		return
	}
	rc := &receiptCall{start: start}
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber() // as Call reads them
	if err := dec.Decode(&v); err == nil {
		rc.args = v
		if in, aerr := arguments(t, v); aerr == nil {
			rc.input = in
		}
	} else {
		// Kept as a JSON string, so that the stored arguments stay JSON.
		rc.input, _ = json.Marshal(string(args))
	}
	r := h.buildReceipt(t, rc, env)
	r.Runner, r.Module, r.Grant = RunnerRemote, "", ""
	h.record(ctx, r)
}
