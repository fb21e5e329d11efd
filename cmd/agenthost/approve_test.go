package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/agenthost/agenthost/host/approval"
)

// approvePolicy makes every call of core:echo wait for a decision.
const approvePolicy = "approve:\n  - tools: [\"core:echo\"]\n    when: {args: {msg: \"*\"}}\n"

func writeApprovePolicy(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(p, []byte(approvePolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestApproveNoTerminal: without a terminal a matching call is denied
// with a message saying how to approve it; --approve approves it.
func TestApproveNoTerminal(t *testing.T) {
	pol := writeApprovePolicy(t)
	toolpacks, _ := filepath.Abs("../../toolpacks")
	for _, tc := range []struct {
		name  string
		extra []string
		want  string
		code  int
	}{
		{"denied", nil, "pass --approve 'core:echo' to approve such calls", 1},
		{"--approve", []string{"--approve", "core:*"}, `"status": "success"`, 0},
		{"--approve other", []string{"--approve", "fs:*"}, "no terminal to ask on", 1},
		{"bad glob", []string{"--approve", "core:["}, "--approve", 2},
	} {
		for _, cmd := range [][]string{
			{"exec", "testdata/echo_action.txt"},
			{"invoke", "core:echo", `{"msg":"hi"}`},
		} {
			t.Run(cmd[0]+"/"+tc.name, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				args := append([]string{cmd[0], "--dir", toolpacks, "--policy", pol, "--cache-dir", t.TempDir()}, cmd[1:]...)
				args = append(args, tc.extra...)
				code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
				if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.want) {
					t.Fatalf("exit %d, want %d with %q:\n%s%s", code, tc.code, tc.want, stdout.String(), stderr.String())
				}
			})
		}
	}
}

// TestApproveQuestionEscaped: what a model wrote (arguments, risks) reaches
// the terminal with control and bidirectional characters escaped.
func TestApproveQuestionEscaped(t *testing.T) {
	b, err := approval.NewBroker(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{approve: approveFlags{minutes: 15}}
	var tty bytes.Buffer
	req := approval.Request{ID: "apr_x", Tenant: "default", Tool: "core:echo", Arguments: []byte("{\"msg\":\"\u202eevil\x1b[2J\"}"), Risks: []string{"args:msg\x07"}}
	e.askTerminal(context.Background(), b, &tty, bufio.NewReader(strings.NewReader("n\n")), req, "terminal:test")
	out := tty.String()
	for _, r := range out {
		if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)) {
			t.Fatalf("the question holds %U:\n%q", r, out)
		}
	}
	if !strings.Contains(out, `\u202eevil\x1b[2J`) || !strings.Contains(out, `args:msg\a`) {
		t.Errorf("the escapes are not shown:\n%s", out)
	}
}

// TestServeApprovalKey: serve refuses an --approval-key it cannot sign
// with (missing, or under 32 bytes) before it listens.
func TestServeApprovalKey(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte("0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, key, want string
	}{
		{"missing", filepath.Join(dir, "none.key"), "--approval-key"},
		{"short", short, "--approval-key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--cache-dir", t.TempDir(), "--approval-key", tc.key}
			if code := run(context.Background(), args, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("exit %d, want 2 with %q: %s", code, tc.want, errb.String())
			}
		})
	}
}
