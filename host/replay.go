package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/receipt"
	"github.com/agenthost/agenthost/host/runner"
)

// Replay (docs/REPLAY.md). A receipt's recorded inputs are the JSON form
// of replayPayload: what the runner recorded (the guest's random seed
// and clock readings), the grant the call ran under and, when small, its
// output, so a replay can say how a policy changed and show how an
// output differs, where the receipt alone holds only digests.

// maxKeptOutput is the largest output a receipt's inputs keep for the
// diff of a replay that does not match; a larger one is compared by its
// digest only.
const maxKeptOutput = 64 << 10

// replayPayload is a receipt's recorded inputs (receipt.Receipt.Inputs).
type replayPayload struct {
	Recorded *runner.Recorded `json:"recorded"`
	Grant    json.RawMessage  `json:"grant,omitempty"`
	Output   json.RawMessage  `json:"output,omitempty"`
}

// replayRecord gathers a call's replay payload while it runs; nil when
// the host records no receipts.
type replayRecord struct {
	grant    *policy.Grant
	recorded *runner.Recorded
}

// replayStart begins the replay payload of a call that has a receipt.
func replayStart(rc *receiptCall) *replayRecord {
	if rc == nil {
		return nil
	}
	return &replayRecord{}
}

// set notes what the runner recorded of a call run under g.
func (rp *replayRecord) set(g *policy.Grant, rec *runner.Recorded) {
	if rp != nil {
		rp.grant, rp.recorded = g, rec
	}
}

// done hands the payload to the call's receipt (deferred before the
// receipt is built). A call whose runner recorded nothing has none.
func (rp *replayRecord) done(rc *receiptCall, env *abi.Envelope) {
	if rp == nil || rp.recorded == nil {
		return
	}
	// The payload is replayPayload's encoding, put together here: the
	// grant's encoding is cached per grant and the output is the
	// envelope's (valid JSON already), so neither is encoded or checked
	// again on each call.
	rec, err := json.Marshal(rp.recorded)
	if err != nil {
		return
	}
	grant, _ := grantEncoding(rp.grant)
	b := make([]byte, 0, len(rec)+len(grant)+len(env.Output)+40)
	b = append(append(b, `{"recorded":`...), rec...)
	if len(grant) > 0 {
		b = append(append(b, `,"grant":`...), grant...)
	}
	if len(env.Output) > 0 && len(env.Output) <= maxKeptOutput {
		b = append(append(b, `,"output":`...), env.Output...)
	}
	rc.setInputs(append(b, '}'))
}

// ReplayOptions says how Host.Replay picks the tool to run.
type ReplayOptions struct {
	// AnyVersion runs the loaded tool with the receipt's tool ID (its
	// latest version) instead of the one whose module has the receipt's
	// digest: another version of the tool on the same call. Its grant
	// may then differ from the receipt's; Replayed.GrantChanged says how.
	AnyVersion bool
}

// Replayed is the outcome of a replay.
type Replayed struct {
	// Tool, Version and Module name the tool that ran (Module is its
	// module's hex sha256).
	Tool, Version, Module string
	// Envelope is the replay's answer; OutputDigest the hex sha256 of
	// its output, as a receipt holds it.
	Envelope     abi.Envelope
	OutputDigest string
	// Match: the replay's output digest, status and error code are the
	// receipt's.
	Match bool
	// Original is the call's output when the receipt kept it (up to 64
	// KiB), for a diff; nil otherwise.
	Original json.RawMessage
	// GrantChanged says how the grant the replay ran under differs from
	// the call's ("" when it does not); set only with AnyVersion, where
	// a difference is no error.
	GrantChanged string
	// Diverged says how the replay strayed from the record (the guest
	// read the clock more or fewer times than it did); "" when it did
	// not.
	Diverged string
}

// ReplayError is why a call cannot be replayed.
type ReplayError struct {
	// Kind is "not-replayable", "module-gone" or "policy-changed".
	Kind string
	// Message says why, naming what is needed (the module's digest, how
	// the grant changed).
	Message string
}

// Error implements error.
func (e *ReplayError) Error() string { return e.Message }

// The kinds of ReplayError.
const (
	ReplayNotReplayable = "not-replayable"
	ReplayModuleGone    = "module-gone"
	ReplayPolicyChanged = "policy-changed"
)

// replayable is the runner kind whose calls are recorded and replayed.
const replayable = manifest.HandlerWasm + ":" + manifest.ABIWasiCommand

// Replay runs the call r records again: the tool whose module has r's
// digest, under the grant r names (its digest must be the same), with r's
// stored arguments and recorded inputs (random seed, clock readings), and
// reports whether the output is the same. A call that cannot be replayed
// (not a wasi-command WebAssembly call, nothing recorded, the module not
// loaded, the policy changed) is a *ReplayError. The replay itself runs
// no receipt.
func (h *Host) Replay(ctx context.Context, r *receipt.Receipt, o ReplayOptions) (*Replayed, error) {
	notReplayable := func(format string, args ...any) error {
		return &ReplayError{Kind: ReplayNotReplayable, Message: fmt.Sprintf(format, args...)}
	}
	if r.Runner != replayable {
		return nil, notReplayable("%s is a %s tool: only WebAssembly wasi-command calls are recorded for replay (%s)", r.Tool, r.Runner, whyNot(r.Runner))
	}
	if len(r.Inputs) == 0 {
		return nil, notReplayable("receipt %d of %s recorded no inputs: the call did not run (%s %s) or was made before calls were recorded", r.Seq, r.Tenant, r.Status, r.Code)
	}
	if receipt.Digest(r.Inputs) != r.InputsDigest {
		return nil, notReplayable("receipt %d's recorded inputs do not match its inputs digest", r.Seq)
	}
	if receipt.Digest(r.Args) != r.ArgsDigest {
		return nil, notReplayable("receipt %d's stored arguments do not match its arguments digest", r.Seq)
	}
	var pl replayPayload
	if err := json.Unmarshal(r.Inputs, &pl); err != nil || pl.Recorded == nil {
		return nil, notReplayable("receipt %d's recorded inputs are not a replay record: %v", r.Seq, err)
	}
	if pl.Recorded.NotReplayable != "" {
		return nil, notReplayable("the call cannot be replayed: %s", pl.Recorded.NotReplayable)
	}
	t, err := h.replayTool(r, o)
	if err != nil {
		return nil, err
	}
	ctx, end, cerr := h.begin(ctx)
	if cerr != nil {
		return nil, cerr
	}
	defer end()
	p, perr := h.prepare(ctx, t)
	if perr != nil {
		return nil, perr
	}
	p.acquire()
	defer p.finish()
	if p.err != nil {
		return nil, p.err
	}
	out := &Replayed{Tool: t.ToolID, Version: t.Version, Module: t.Digest(), Original: pl.Output}
	if d := grantDigest(p.grant); d != r.Grant {
		how := grantChange(pl.Grant, p.grant)
		if !o.AnyVersion {
			return nil, &ReplayError{Kind: ReplayPolicyChanged, Message: fmt.Sprintf("the policy changed since the call: %s's grant has digest %s, the call's %s (%s)", t.ToolID, short(d), short(r.Grant), how)}
		}
		out.GrantChanged = how
	}
	if p.grant.Denied {
		return nil, &ReplayError{Kind: ReplayPolicyChanged, Message: fmt.Sprintf("the policy now denies %s", t.ToolID)}
	}
	res, err := h.run(ctx, p, runner.Request{Input: r.Args, Logger: h.log.With("tool", t.ToolID, "replay", r.CallID), Replay: pl.Recorded})
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", t.ToolID, err)
	}
	env := abi.Envelope{ToolID: t.ToolID, Status: abi.StatusSuccess, Output: json.RawMessage("null"), Logs: nonNil(res.Logs), Usage: res.Usage}
	if res.Err != nil {
		env.Status, env.Error = abi.StatusFailure, res.Err
	} else if outp, oerr := output(t, res.Output); oerr != nil {
		env.Status, env.Error = abi.StatusFailure, oerr
	} else {
		env.Output = outp
	}
	if res.Err != nil && res.Err.Code == abi.CodeInvalidArguments && strings.HasPrefix(res.Err.Message, "replay: ") {
		// The runner refused the record (runner.Request.Replay).
		return nil, notReplayable("%s", strings.TrimPrefix(res.Err.Message, "replay: "))
	}
	if rec := res.Recorded; rec != nil {
		out.Diverged = rec.NotReplayable
	}
	out.Envelope = env
	out.OutputDigest = receipt.Digest(env.Output)
	code := ""
	if env.Error != nil {
		code = string(env.Error.Code)
	}
	out.Match = out.OutputDigest == r.OutputDigest && string(env.Status) == r.Status && code == r.Code
	return out, nil
}

// replayTool finds the tool a replay of r runs: the loaded tool whose
// module has r's digest (r's tool first), or with AnyVersion r's tool ID.
func (h *Host) replayTool(r *receipt.Receipt, o ReplayOptions) (*manifest.Tool, error) {
	if o.AnyVersion {
		t, err := h.reg.Lookup(r.Tool)
		if err != nil {
			return nil, &ReplayError{Kind: ReplayModuleGone, Message: fmt.Sprintf("no loaded tool is %s: %v", r.Tool, err)}
		}
		return t, nil
	}
	var found *manifest.Tool
	for _, t := range h.reg.All() {
		if t.Handler.Type != manifest.HandlerWasm || !strings.EqualFold(t.Digest(), r.Module) {
			continue
		}
		if found == nil || (t.ToolID == r.Tool && found.ToolID != r.Tool) || (t.ToolID == r.Tool && t.Version == r.ToolVersion) {
			found = t
		}
	}
	if found == nil {
		return nil, &ReplayError{Kind: ReplayModuleGone, Message: fmt.Sprintf("no loaded tool has the module the call ran (sha256 %s, %s@%s): load the folder that holds it", r.Module, r.Tool, r.ToolVersion)}
	}
	return found, nil
}

// whyNot says why calls of a runner kind are not recorded.
func whyNot(kind string) string {
	switch {
	case kind == manifest.HandlerWasm+":"+manifest.ABIExtism:
		return "an Extism guest's host functions (HTTP, config, variables) answer from outside the record"
	case kind == manifest.HandlerScript:
		return "a script runs in a native interpreter whose clock, randomness and system calls are not recorded"
	case kind == manifest.HandlerServiceMethod:
		return "a native Go function runs outside the sandbox, unrecorded"
	case kind == manifest.HandlerMCP:
		return "an MCP tool runs in another server, which the host cannot run again"
	case kind == manifest.HandlerWorkflow:
		return "a workflow is replayed step by step: replay the receipts of its steps"
	}
	return "its runner records nothing"
}

// grantChange says how the grant g differs from was, the call's grant in
// its JSON form: the fields that differ with their old and new values.
func grantChange(was json.RawMessage, g *policy.Grant) string {
	now, err := json.Marshal(g)
	if err != nil || len(was) == 0 {
		return "the call's grant was not recorded"
	}
	var a, b map[string]json.RawMessage
	if json.Unmarshal(was, &a) != nil || json.Unmarshal(now, &b) != nil {
		return "the call's grant cannot be read"
	}
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var diffs []string
	for _, k := range keys {
		if !bytes.Equal(a[k], b[k]) {
			diffs = append(diffs, fmt.Sprintf("%s was %s, is %s", k, clip(a[k]), clip(b[k])))
		}
	}
	if len(diffs) == 0 {
		return "the grant's encoding changed"
	}
	return strings.Join(diffs, "; ")
}

// clip shortens a JSON value for a message.
func clip(v json.RawMessage) string {
	if v == nil {
		return "absent"
	}
	const n = 160
	if len(v) > n {
		return string(v[:n]) + "…"
	}
	return string(v)
}

// short is a digest's first 12 digits.
func short(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}
