package runner

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/abi"
)

// GuestError reads the {"error":{"code","message"}} body a failing guest
// may write to stdout. ok is false unless stdout is exactly such
// an object with a non-empty message.
func GuestError(stdout []byte) (code, message string, ok bool) {
	var body struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(stdout, &body); err != nil || body.Error == nil || body.Error.Message == "" {
		return "", "", false
	}
	return body.Error.Code, body.Error.Message, true
}

// ExitFailure is the TOOL_ERROR of a guest that exited with a non-zero
// status: the message of its stdout error body if it wrote one (its own
// code goes into Details as "toolCode", the one name every runner uses), otherwise "exit status N" plus
// the most telling log line: the first "panic: " or "fatal error: " line
// (Go runtime crashes), else the last non-empty line that is not a host
// refusal note.
func ExitFailure(status uint32, stdout []byte, logs []string) *abi.Error {
	if code, msg, ok := GuestError(stdout); ok {
		e := abi.Errorf(abi.CodeToolError, "%s", msg)
		if code != "" {
			e = e.WithDetails(map[string]any{"toolCode": code, "exitStatus": status})
		}
		return e
	}
	if line := crashLine(logs); line != "" {
		return abi.Errorf(abi.CodeToolError, "exit status %d: %s", status, line)
	}
	return abi.Errorf(abi.CodeToolError, "exit status %d", status)
}

// Refused applies the refused-access rule: a failed call that saw refused
// accesses fails with PERMISSION_DENIED, whatever the guest made of the
// refusal. denials holds the (first) refusal lines and count the number
// of refusals, which may be larger; both and the original code go into
// Details. A nil err (success) or no refusals returns err unchanged.
func Refused(err *abi.Error, denials []string, count int) *abi.Error {
	if err == nil || len(denials) == 0 || err.Code == abi.CodePermissionDenied {
		return err
	}
	count = max(count, len(denials))
	msg := denials[0]
	if count > 1 {
		msg = fmt.Sprintf("%s (and %d more)", msg, count-1)
	}
	return &abi.Error{
		Code:    abi.CodePermissionDenied,
		Message: fmt.Sprintf("%s; the call then failed with %s: %s", msg, err.Code, err.Message),
		Details: map[string]any{"denied": denials, "deniedCount": count, "cause": err.Code},
	}
}

// crashLine picks the log line that best explains a crash.
func crashLine(logs []string) string {
	for _, l := range logs {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			return strings.TrimSpace(l)
		}
	}
	for i := len(logs) - 1; i >= 0; i-- {
		if line := strings.TrimSpace(logs[i]); line != "" && !strings.HasPrefix(line, "denied: ") {
			return line
		}
	}
	return ""
}

// Rewrite passes the result's logs and error message through r (for
// example to hide host paths or redact secrets); the error is copied, not
// changed in place.
func (res *Result) Rewrite(r *strings.Replacer) {
	for i, l := range res.Logs {
		res.Logs[i] = r.Replace(l)
	}
	if res.Err != nil {
		e := *res.Err
		e.Message = r.Replace(e.Message)
		res.Err = &e
	}
}
