package toolcall

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/runner/wasm"
)

// TestAnswer reads what the host's import writes (wasm.Answer): the
// output of a success as is, a failure's code, message, tool and
// observation; anything else is an error, never a panic.
func TestAnswer(t *testing.T) {
	tests := []struct {
		name    string
		answer  []byte
		out     string   // a success's output
		code    abi.Code // a failure's code
		want    string   // in the failure's error text
		badWire string   // decode fails with this
	}{
		{name: "output", answer: wasm.Answer(abi.Envelope{ToolID: "core:echo", Status: abi.StatusSuccess, Output: json.RawMessage(`{"a":[1,"x"]}`), Logs: []string{"not for the guest"}}, ""), out: `{"a":[1,"x"]}`},
		{name: "no output", answer: wasm.Answer(abi.Envelope{ToolID: "core:echo", Status: abi.StatusSuccess}, ""), out: `null`},
		{name: "failure", answer: wasm.Answer(abi.Failure("fs:read", abi.Errorf(abi.CodePermissionDenied, "denied: open /etc/passwd")), "Observation: Error - denied"), code: abi.CodePermissionDenied, want: "fs:read failed with PERMISSION_DENIED: Observation: Error - denied"},
		{name: "failure without observation", answer: wasm.Answer(abi.Failure("x:y", abi.Errorf(abi.CodeTimeout, "too slow")), ""), code: abi.CodeTimeout, want: "x:y failed with TIMEOUT: too slow"},
		{name: "empty", answer: []byte{}, badWire: "answered with nothing"},
		{name: "unknown kind", answer: []byte(`{"envelope":{}}`), badWire: "unknown kind"},
		{name: "bad failure", answer: []byte("F{"), badWire: "bad failure"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := decode(tc.answer)
			if tc.badWire != "" {
				if err == nil || !strings.Contains(err.Error(), tc.badWire) {
					t.Fatalf("got %+v, %v; want an error with %q", r, err, tc.badWire)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := r.Result("asked:name")
			if tc.code == "" {
				if err != nil || string(out) != tc.out {
					t.Fatalf("got %s, %v; want %s", out, err, tc.out)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != tc.code || !strings.Contains(e.Error(), tc.want) {
				t.Fatalf("got %v, want %s with %q", err, tc.code, tc.want)
			}
		})
	}
}

// TestAnswerCopied: a success's output does not share the answer
// buffer, which the next inner call overwrites.
func TestAnswerCopied(t *testing.T) {
	buf := wasm.Answer(abi.Envelope{Status: abi.StatusSuccess, Output: json.RawMessage(`"first"`)}, "")
	r, err := decode(buf)
	if err != nil {
		t.Fatal(err)
	}
	copy(buf, `S"other"`)
	if got := string(r.Envelope.Output); got != `"first"` {
		t.Fatalf("output changed to %s with the buffer", got)
	}
}
