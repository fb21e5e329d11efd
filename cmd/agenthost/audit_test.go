package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestAuditFailOn pins the CI gate: audit exited 0 whatever it found.
// The riskpack's tool asks for a workspace write the default policy denies
// (medium) and runs an interpreter (medium).
func TestAuditFailOn(t *testing.T) {
	tests := []struct {
		failOn   string
		wantCode int
		wantErr  string
	}{
		{"", 0, ""},
		{"high", 0, ""},
		{"medium", 1, "risk:writer: denied fileAccess.allowWrite out/** (medium)"},
		{"low", 1, "risk:writer: runs native code"},
		{"severe", 2, "--fail-on"},
	}
	for _, tc := range tests {
		t.Run("fail-on="+tc.failOn, func(t *testing.T) {
			args := []string{"audit", "--dir", "testdata/riskpack", "--format", "json"}
			if tc.failOn != "" {
				args = append(args, "--fail-on", tc.failOn)
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Fatalf("stderr lacks %q:\n%s", tc.wantErr, stderr.String())
			}
		})
	}
}

// TestAuditHTML checks each --format on its own, html included (it once
// needed --diff), and that a format outside the list is a usage error.
func TestAuditHTML(t *testing.T) {
	tests := []struct {
		format string
		code   int
		want   string
	}{
		{"html", 0, `<h2 id="risk:writer@1.0.0"><code>risk:writer</code> 1.0.0</h2>`},
		{"markdown", 0, "## `risk:writer` 1.0.0"},
		{"yaml", 2, "--format must be text, json, markdown or html"},
	}
	for _, tc := range tests {
		t.Run(tc.format, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"audit", "--dir", "testdata/riskpack", "--format", tc.format}, strings.NewReader(""), &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if !strings.Contains(stdout.String()+stderr.String(), tc.want) {
				t.Errorf("output lacks %q:\n%s%s", tc.want, stdout.String(), stderr.String())
			}
		})
	}
}
