package runner_test

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/runner"
)

func TestExitFailure(t *testing.T) {
	tests := []struct {
		name   string
		stdout string
		logs   []string
		want   string
	}{
		{"error body", `{"error":{"code":"BAD","message":"bad input"}}`, nil, "bad input"},
		{"error body no code", `{"error":{"message":"m"}}`, nil, "m"},
		{"empty message ignored", `{"error":{"code":"X","message":""}}`, nil, "exit status 3"},
		{"not json", `oops`, []string{"first", "last", ""}, "exit status 3: last"},
		{"denial lines skipped", ``, []string{"real", "denied: open /x (read)"}, "exit status 3: real"},
		{"nothing", ``, nil, "exit status 3"},
		{"go panic", ``, []string{"panic: boom", "", "goroutine 1 [running]:", "main.main()"}, "exit status 3: panic: boom"},
		{"go fatal", ``, []string{"fatal error: out of memory", "runtime stack:"}, "exit status 3: fatal error: out of memory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := runner.ExitFailure(3, []byte(tc.stdout), tc.logs)
			if e.Code != abi.CodeToolError || e.Message != tc.want {
				t.Fatalf("got %v, want TOOL_ERROR %q", e, tc.want)
			}
		})
	}
}

func TestRefused(t *testing.T) {
	base := abi.Errorf(abi.CodeToolError, "exit status 1")
	if got := runner.Refused(base, nil, 0); got != base {
		t.Fatalf("no denials changed the error: %v", got)
	}
	if got := runner.Refused(nil, []string{"denied: x"}, 1); got != nil {
		t.Fatalf("success became %v", got)
	}
	got := runner.Refused(base, []string{"denied: open /etc/passwd (read)", "denied: y"}, 7)
	if got.Code != abi.CodePermissionDenied || !strings.Contains(got.Message, "/etc/passwd") ||
		!strings.Contains(got.Message, "and 6 more") || !strings.Contains(got.Message, "TOOL_ERROR") {
		t.Fatalf("got %v", got)
	}
}

// TestExitFailureToolCode pins the one name of a guest's own error code:
// details.toolCode, as the script bridge uses (the wasm runners used
// "guestCode").
func TestExitFailureToolCode(t *testing.T) {
	e := runner.ExitFailure(1, []byte(`{"error":{"code":"NOT_FOUND","message":"no such row"}}`), nil)
	d, ok := e.Details.(map[string]any)
	if !ok || d["toolCode"] != "NOT_FOUND" {
		t.Fatalf("details = %#v, want toolCode NOT_FOUND", e.Details)
	}
	if _, ok := d["guestCode"]; ok {
		t.Fatalf("details still carry guestCode: %#v", d)
	}
}
