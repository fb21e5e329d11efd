package guest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agenthost/agenthost/abi"
)

// Exit codes of a wasi-command guest.
const (
	exitOK      = 0
	exitFailure = 1
)

// handler is the byte-level form of a tool: arguments JSON in, result JSON
// out. Run adapts a typed function to it; the transport (stdin/stdout
// today) only moves bytes.
type handler func(ctx context.Context, args []byte) ([]byte, error)

// Run runs fn as the tool's body and exits the process; it never returns.
//
// It reads all of stdin as the JSON arguments object and decodes it into
// In (empty input is treated as {}; unknown object fields and trailing data
// are rejected). A decode error is reported with code INVALID_ARGUMENTS.
// Otherwise fn is called; its Out is written to stdout as JSON and the
// process exits 0. If fn returns an error, {"error":{"code","message"}} is
// written to stdout and the process exits 1. The code is TOOL_ERROR unless
// the error wraps an *[abi.Error] (see [Errorf]), whose code, message and
// details are used. A panic in fn is reported as TOOL_ERROR.
//
// In a reactor build (-buildmode=c-shared, the fast path of docs/ABI.md)
// Run is called from the host's agenthost_init: it records fn and
// returns, and each call then reaches fn through agenthost_call.
func Run[In, Out any](fn func(ctx context.Context, in In) (Out, error)) {
	h := typed(fn)
	if register(h, warmTypes[In, Out]) {
		return
	}
	os.Exit(serve(context.Background(), commandStdin(warmTypes[In, Out]), os.Stdout, h))
}

// Errorf returns an error carrying code, for a tool that wants a code other
// than TOOL_ERROR (for example abi.CodeInvalidArguments for arguments the
// schema cannot express, or abi.CodePermissionDenied).
func Errorf(code abi.Code, format string, args ...any) error {
	return abi.Errorf(code, format, args...)
}

// Logf writes one log line to stderr; the host returns it in the
// envelope's logs. A trailing newline is added if missing. Logs are
// truncated by the host (64 KiB in all); never log secrets.
func Logf(format string, args ...any) {
	logTo(os.Stderr, format, args...)
}

// logTo writes one formatted line to w.
func logTo(w io.Writer, format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if len(s) == 0 || s[len(s)-1] != '\n' {
		s += "\n"
	}
	_, _ = io.WriteString(w, s)
}

// typed adapts fn to a handler.
func typed[In, Out any](fn func(ctx context.Context, in In) (Out, error)) handler {
	return func(ctx context.Context, args []byte) (out []byte, err error) {
		var in In
		if err := decode(args, &in); err != nil {
			return nil, abi.Errorf(abi.CodeInvalidArguments, "decode arguments: %s", err.Error())
		}
		defer func() {
			if r := recover(); r != nil {
				out, err = nil, abi.Errorf(abi.CodeToolError, "panic: %v", r)
			}
		}()
		res, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		return encode(res)
	}
}

// warmTypes encodes a zero Out and decodes an empty object into an In,
// so that encoding/json has built its per-type state for both: a reactor
// build does it before the host's snapshot (reactor_wasip1.go). fn is not
// called. A type whose JSON methods fail or panic on a zero value is
// skipped; its state is then built by each call.
func warmTypes[In, Out any]() {
	defer func() { _ = recover() }()
	var out Out
	_, _ = encode(out)
	var in In
	_ = decode([]byte("{}"), &in)
}

// serve runs h on all of r and writes the result or the error object to w.
// It returns the process exit code.
func serve(ctx context.Context, r io.Reader, w io.Writer, h handler) int {
	args, err := io.ReadAll(r)
	if err != nil {
		return writeError(w, abi.Errorf(abi.CodeToolError, "read stdin: %s", err.Error()))
	}
	out, err := h(ctx, args)
	if err != nil {
		return writeError(w, err)
	}
	if _, err := w.Write(out); err != nil {
		return exitFailure
	}
	return exitOK
}

// decode unmarshals the arguments strictly: one JSON value, no unknown
// object fields. Blank input decodes as {}.
func decode(args []byte, v any) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the arguments value")
	}
	return nil
}

// encode marshals v as one line of JSON without HTML escaping, so text
// such as "a < b" reaches the model as written.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, abi.Errorf(abi.CodeToolError, "encode result: %s", err.Error())
	}
	return buf.Bytes(), nil
}

// errorBody is the object a failing guest writes to stdout.
type errorBody struct {
	Error *abi.Error `json:"error"`
}

// toABI returns the wire error for err. An *abi.Error keeps its code,
// message and details; one wrapped in more context keeps its code and
// details and gets the whole chain's text as message; anything else is
// TOOL_ERROR.
func toABI(err error) *abi.Error {
	var ae *abi.Error
	if !errors.As(err, &ae) {
		return &abi.Error{Code: abi.CodeToolError, Message: err.Error()}
	}
	out := *ae
	if out.Code == "" {
		out.Code = abi.CodeToolError
	}
	if ae != err {
		out.Message = err.Error()
	}
	return &out
}

// writeError writes err as {"error":{...}} and returns exitFailure.
func writeError(w io.Writer, err error) int {
	ae := toABI(err)
	b, encErr := encode(errorBody{Error: ae})
	if encErr != nil {
		b, _ = encode(errorBody{Error: &abi.Error{Code: ae.Code, Message: ae.Message}})
	}
	_, _ = w.Write(b)
	return exitFailure
}
