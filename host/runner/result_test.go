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
