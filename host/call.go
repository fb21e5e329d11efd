package host

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/credential"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/schema"
)

// Call runs the tool id ("id" or "id@version") with args, a JSON object
// (empty or null means {}). It always returns an envelope: bad arguments,
// unknown tools and every tool failure are failure envelopes with an error
// code, never a Go error or a panic.
func (h *Host) Call(ctx context.Context, id string, args json.RawMessage) abi.Envelope {
	if h.opts.Tracer != nil {
		ctx, end := h.startSpan(ctx, id)
		env := h.callJSON(ctx, id, args)
		end(env)
		return env
	}
	return h.callJSON(ctx, id, args)
}

func (h *Host) callJSON(ctx context.Context, id string, args json.RawMessage) abi.Envelope {
	start := time.Now()
	t, err := h.reg.Lookup(id)
	if err != nil {
		return h.logged(finish(failure(id, err), start))
	}
	var v any
	if len(bytes.TrimSpace(args)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return h.logged(finish(abi.Failure(t.ToolID, abi.Errorf(abi.CodeInvalidArguments, "arguments are not valid JSON: %s", err.Error())), start))
		}
		if dec.More() {
			return h.logged(finish(abi.Failure(t.ToolID, abi.Errorf(abi.CodeInvalidArguments, "arguments hold more than one JSON value")), start))
		}
	}
	return h.logged(finish(h.call(ctx, t, v), start))
}

// CallArgs runs tool id with arguments already decoded (for example from
// an ACTION block, where every leaf is a string): they are coerced by the
// tool's parameter schema before validation.
func (h *Host) CallArgs(ctx context.Context, id string, args map[string]any) abi.Envelope {
	if h.opts.Tracer != nil {
		ctx, end := h.startSpan(ctx, id)
		env := h.callArgs(ctx, id, args)
		end(env)
		return env
	}
	return h.callArgs(ctx, id, args)
}

func (h *Host) callArgs(ctx context.Context, id string, args map[string]any) abi.Envelope {
	start := time.Now()
	t, err := h.reg.Lookup(id)
	if err != nil {
		return h.logged(finish(failure(id, err), start))
	}
	var v any
	if args != nil {
		v = args
	}
	return h.logged(finish(h.call(ctx, t, v), start))
}

// call is the shared pipeline: grant, coerce, validate, run, check output.
func (h *Host) call(ctx context.Context, t *manifest.Tool, args any) (result abi.Envelope) {
	// The call's receipt (receipts.go); rc is nil without Options.Receipts.
	rc := h.receiptStart(args)
	if rc != nil {
		defer func() { h.receiptEnd(ctx, t, rc, result) }()
	}
	rp := replayStart(rc) // what a replay needs (replay.go); nil without receipts
	defer rp.done(rc, &result)
	input, aerr := arguments(t, args)
	rc.setInput(input)
	if aerr != nil {
		return abi.Failure(t.ToolID, aerr)
	}
	ctx, end, cerr := h.begin(ctx)
	if cerr != nil {
		return abi.Failure(t.ToolID, cerr)
	}
	defer end()
	p, perr := h.prepare(ctx, t)
	if perr != nil {
		return abi.Failure(t.ToolID, perr)
	}
	p.acquire()
	defer p.finish()
	rc.setGrant(p.grant)
	if p.grant.Denied {
		return abi.Failure(t.ToolID, abi.Errorf(abi.CodePermissionDenied, "the operator's policy denies tool %s", t.ToolID))
	}
	if p.err != nil {
		return abi.Failure(t.ToolID, p.err)
	}
	// A call the policy's approve rules match waits for a decision (approve.go).
	if aerr := h.approve(ctx, t, p.grant, input, rc); aerr != nil {
		return abi.Failure(t.ToolID, aerr)
	}
	log := h.log.With("tool", t.ToolID)
	callEnv, cerr := h.credentials(ctx, t, input)
	if cerr != nil {
		return abi.Failure(t.ToolID, cerr)
	}
	ctx, prog, perr := h.codeProgram(ctx, t, p)
	if perr != nil {
		return abi.Failure(t.ToolID, perr)
	}
	start := time.Now()
	res, err := h.run(ctx, p, runner.Request{Input: input, Logger: log, Env: callEnv})
	rp.set(p.grant, res.Recorded)
	prog.settle(&res)
	red := h.redact(p.grant.Env, callEnv, &res)
	if ctx.Err() != nil && (err != nil || res.Err != nil) && !(res.Err != nil && res.Err.Code == abi.CodeTimeout && time.Since(start) >= p.grant.Limits.Timeout && p.grant.Limits.Timeout > 0) {
		// The caller (or Close) ended the call: say so, whatever the
		// runner made of the interruption.
		return abi.Envelope{ToolID: t.ToolID, Status: abi.StatusFailure, Output: json.RawMessage("null"), Logs: nonNil(res.Logs), Usage: res.Usage,
			Error: callerError(ctx, p.grant.Limits.Timeout, fmt.Sprintf("after %d ms", time.Since(start).Milliseconds()))}
	}
	if err != nil {
		log.Error("runner failed", "error", err)
		return abi.Failure(t.ToolID, abi.Errorf(abi.CodeInternal, "host error running %s: %s", t.ToolID, red.String(err.Error())))
	}
	env := abi.Envelope{ToolID: t.ToolID, Status: abi.StatusSuccess, Output: json.RawMessage("null"), Logs: nonNil(res.Logs), Usage: res.Usage}
	if res.Err != nil {
		if res.Err.Code == abi.CodeTimeout && p.grant.Limits.Timeout > 0 {
			res.Err = abi.Errorf(abi.CodeTimeout, "the call exceeded the tool's timeoutMs limit of %d ms and was stopped", p.grant.Limits.Timeout.Milliseconds()).WithDetails(res.Err.Details)
		}
		env.Status, env.Error = abi.StatusFailure, res.Err
		return env
	}
	out, oerr := output(t, res.Output)
	if oerr != nil {
		env.Status, env.Error = abi.StatusFailure, oerr
		return env
	}
	env.Output = out
	return env
}

// run calls the prepared runner; a runner that panics (a host bug, or a
// runtime torn down by Close) fails the call instead of the host.
func (h *Host) run(ctx context.Context, p *prepared, req runner.Request) (res runner.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			if ctx.Err() != nil {
				err = context.Cause(ctx)
				return
			}
			req.Logger.Error("runner panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("runner panicked: %v", r)
		}
	}()
	return p.run.Run(ctx, req)
}

func nonNil(logs []string) []string {
	if logs == nil {
		return []string{}
	}
	return logs
}

// arguments coerces and validates args against the tool's parameters and
// returns them as compact JSON with sorted keys.
func arguments(t *manifest.Tool, args any) ([]byte, *abi.Error) {
	if args == nil {
		args = map[string]any{}
	}
	if s := t.ParametersSchema(); s != nil {
		args = s.Coerce(args)
		if err := s.Validate(args); err != nil {
			return nil, err
		}
	} else if _, ok := args.(map[string]any); !ok {
		return nil, abi.Errorf(abi.CodeInvalidArguments, "arguments must be a JSON object, got %s", jsonType(args))
	}
	b, err := schema.Canonical(args)
	if err != nil {
		return nil, abi.Errorf(abi.CodeInvalidArguments, "arguments cannot be encoded: %s", err.Error())
	}
	return b, nil
}

// output turns the runner's raw bytes into the envelope's output:
// text mode wraps them in a JSON string; json mode requires one JSON value
// (empty = null); the output schema, when present, must hold.
func output(t *manifest.Tool, raw []byte) (json.RawMessage, *abi.Error) {
	var out json.RawMessage
	switch {
	case t.Handler.OutputFormat == manifest.OutputText:
		b, err := json.Marshal(string(raw))
		if err != nil {
			return nil, abi.Errorf(abi.CodeInvalidOutput, "output cannot be encoded as a JSON string: %s", err.Error())
		}
		out = b
	case len(bytes.TrimSpace(raw)) == 0:
		out = json.RawMessage("null")
	default:
		var buf bytes.Buffer
		if err := json.Compact(&buf, bytes.TrimSpace(raw)); err != nil {
			return nil, abi.Errorf(abi.CodeInvalidOutput, "tool output is not valid JSON: %s", err.Error()).
				WithDetails(map[string]any{"outputPrefix": prefix(raw, 200)})
		}
		out = buf.Bytes()
	}
	if s := t.OutputSchema(); s != nil && !(s.AnyObject() && out[0] == '{') {
		// Compact checked the JSON; an object needs no more for a schema
		// that takes any object (7 µs of a core:echo call to decode it).
		var v any
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, abi.Errorf(abi.CodeInvalidOutput, "tool output cannot be decoded: %s", err.Error())
		}
		if err := s.Validate(v); err != nil {
			return nil, abi.Errorf(abi.CodeInvalidOutput, "tool output does not match its output schema: %s", err.Message).WithDetails(err.Details)
		}
	}
	return out, nil
}

func prefix(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

// failure maps a lookup error to a failure envelope.
func failure(id string, err error) abi.Envelope {
	return abi.Failure(id, asABIError(err))
}

func asABIError(err error) *abi.Error {
	if ae, ok := err.(*abi.Error); ok {
		return ae
	}
	var ae *abi.Error
	if errors.As(err, &ae) {
		return abi.Errorf(ae.Code, "%s", err.Error())
	}
	return abi.Errorf(abi.CodeInternal, "%s", err.Error())
}

func finish(env abi.Envelope, start time.Time) abi.Envelope {
	env.DurationMs = float64(time.Since(start).Microseconds()) / 1000
	return env
}

// logged records a finished call for Health and writes its one info line: a call ID, the tool,
// status, code, duration and fuel. Arguments, output and logs stay out of
// it (they may hold secrets).
func (h *Host) logged(env abi.Envelope) abi.Envelope {
	h.health.record(env)
	if !h.log.IsInfo() {
		return env
	}
	code := ""
	if env.Error != nil {
		code = string(env.Error.Code)
	}
	var id [6]byte
	_, _ = rand.Read(id[:])
	args := []any{"call_id", hex.EncodeToString(id[:]), "tool", env.ToolID, "status", env.Status, "code", code, "duration_ms", env.DurationMs}
	if env.Usage.Fuel != nil {
		args = append(args, "fuel", *env.Usage.Fuel)
	}
	h.log.Info("call", args...)
	return env
}

// redact removes secrets from every string of a call's result, read as
// decoded (JSON escapes included): the values of the host environment
// variables granted to the tool (every host variable is a secret), the
// call's own credentials with their common encodings, and any live
// credential of any tool. A tool that prints one must not hand it to the
// caller, the model or a log. It returns the Redactor it used (nil when
// there is nothing to redact) for the host's own messages about the call.
func (h *Host) redact(grantEnv, callEnv map[string]string, res *runner.Result) *credential.Redactor {
	secrets := make([]string, 0, len(grantEnv)+4*len(callEnv))
	for _, v := range grantEnv {
		secrets = append(secrets, v)
	}
	for _, v := range encodedForms(callEnv) {
		secrets = append(secrets, v)
	}
	r := credential.NewRedactor(secrets, h.liveCredential())
	if r == nil {
		return nil
	}
	for i, l := range res.Logs {
		res.Logs[i] = r.String(l)
	}
	if res.Err != nil {
		e := *res.Err
		e.Message = r.String(e.Message)
		e.Details, _ = r.Value(e.Details)
		res.Err = &e
	}
	res.Output = r.Bytes(res.Output)
	return r
}

// liveCredential reports whether a token is a live credential of this
// host's issuer (any tenant, any tool); nil when the issuer cannot tell.
func (h *Host) liveCredential() credential.Live {
	v, ok := h.opts.Credentials.(interface {
		Verify(token, tenant, tool string) (credential.Claims, error)
	})
	if !ok {
		return nil
	}
	return func(tok string) bool { _, err := v.Verify(tok, "", ""); return err == nil }
}

// credentials mints the call's credentials (securityContext.credentials),
// each in AGENTHOST_CREDENTIAL_<NAME>, and refuses arguments that carry a
// live credential: a model must never pass one to a tool.
func (h *Host) credentials(ctx context.Context, t *manifest.Tool, input []byte) (map[string]string, *abi.Error) {
	if live := h.liveCredential(); live != nil && credential.NewRedactor(nil, live).Contains(string(input)) {
		return nil, abi.Errorf(abi.CodeInvalidArguments, "the arguments carry a credential; credentials reach a tool only from the host, never through arguments")
	}
	sc := t.SecurityContext
	if sc == nil || len(sc.Credentials) == 0 {
		return nil, nil
	}
	if h.opts.Credentials == nil {
		return nil, abi.Errorf(abi.CodeLoadError, "tool %s requests credentials and this host has no credential issuer", t.ToolID)
	}
	tenant := h.opts.Tenant
	if tenant == "" {
		tenant = "default"
	}
	env := make(map[string]string, len(sc.Credentials))
	for _, name := range sc.Credentials {
		c, err := h.opts.Credentials.Mint(ctx, credential.Request{Tenant: tenant, Tool: t.ToolID, Name: name})
		if err != nil {
			h.log.Error("minting a credential failed", "tool", t.ToolID, "credential", name, "error", err)
			return nil, abi.Errorf(abi.CodeInternal, "the credential %q could not be issued", name)
		}
		env[credential.EnvName(name)] = c.Token
	}
	return env, nil
}

// encodedForms adds to a call's credentials their common encodings
// (base64, base64url, hex), so that a tool which encodes one before
// printing it is redacted too.
func encodedForms(env map[string]string) map[string]string {
	if len(env) == 0 {
		return nil
	}
	out := make(map[string]string, 4*len(env))
	for k, v := range env {
		out[k] = v
		out[k+"#b64"] = base64.StdEncoding.EncodeToString([]byte(v))
		out[k+"#b64url"] = base64.RawURLEncoding.EncodeToString([]byte(v))
		out[k+"#hex"] = hex.EncodeToString([]byte(v))
	}
	return out
}

// begin registers a call and ties its context to the host's lifetime; end
// must be called when it returns. A closed host refuses new calls.
func (h *Host) begin(ctx context.Context) (context.Context, func(), *abi.Error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, nil, closedError()
	}
	h.inflight.Add(1)
	h.mu.Unlock()
	cctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(h.life, func() { cancel(errClosed) })
	return cctx, func() {
		stop()
		cancel(nil)
		h.inflight.Done()
	}, nil
}

// BatchCall is one call of a Batch.
type BatchCall struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

// Batch runs calls concurrently (at most twice the CPUs at a time) and
// returns one envelope per call, in order.
func (h *Host) Batch(ctx context.Context, calls []BatchCall) []abi.Envelope {
	out := make([]abi.Envelope, len(calls))
	sem := make(chan struct{}, 2*runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = h.Call(ctx, c.Tool, c.Args)
		}()
	}
	wg.Wait()
	return out
}
