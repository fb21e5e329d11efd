package policy_test

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/policy"
)

func TestApproveParse(t *testing.T) {
	cases := []struct {
		name, doc string
		want      []string // substrings of the error; none: valid
	}{
		{"full", `approve:
  - tools: ["fs:write", "mcp:github.*"]
    when: {write: true, hosts: ["*.example.com"], credentials: true, args: {path: "secrets/**", "/options/target": "prod-*"}}
    timeoutSeconds: 120
`, nil},
		{"tools only", "approve: [{tools: [\"*\"]}]\n", nil},
		{"unknown rule key", "approve: [{tools: [\"fs:write\"], whne: {}}]\n", []string{"/approve/0", "whne"}},
		{"unknown condition", "approve: [{tools: [\"fs:write\"], when: {network: true}}]\n", []string{"/approve/0/when", "network"}},
		{"no tools", "approve: [{tools: []}]\n", []string{"/approve/0/tools", "at least one"}},
		{"missing tools", "approve: [{timeoutSeconds: 5}]\n", []string{"/approve/0", "tools"}},
		{"bad tool glob", "approve: [{tools: [\"fs:[write\"]}]\n", []string{"/approve/0/tools/0", "syntax error"}},
		{"upper-case tool glob", "approve: [{tools: [\"FS:write\"]}]\n", []string{"/approve/0/tools/0", "not allowed"}},
		{"timeout too long", "approve: [{tools: [\"fs:write\"], timeoutSeconds: 3601}]\n", []string{"/approve/0/timeoutSeconds", "3600"}},
		{"negative timeout", "approve: [{tools: [\"fs:write\"], timeoutSeconds: -1}]\n", []string{"/approve/0/timeoutSeconds"}},
		{"bad host", "approve: [{tools: [\"web:*\"], when: {hosts: [\"ex*ample.com\"]}}]\n", []string{"/approve/0/when/hosts/0"}},
		{"host with port", "approve: [{tools: [\"web:*\"], when: {hosts: [\"https://example.com:8443\"]}}]\n", []string{"/approve/0/when/hosts/0", "without scheme or port"}},
		{"bad arg glob", "approve: [{tools: [\"fs:*\"], when: {args: {path: \"secrets/[\"}}}]\n", []string{"/approve/0/when/args/path", "syntax error"}},
		{"bad arg pointer", "approve: [{tools: [\"fs:*\"], when: {args: {\"/a~2b\": \"x\"}}}]\n", []string{"/approve/0/when/args/~1a~02b", "~"}},
		{"empty arg glob", "approve: [{tools: [\"fs:*\"], when: {args: {path: \"\"}}}]\n", []string{"/approve/0/when/args/path", "empty"}},
		{"wrong type", "approve: [{tools: [\"fs:*\"], when: {write: \"yes\"}}]\n", []string{"/approve/0/when/write"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := policy.Parse([]byte(tc.doc), "policy.yaml")
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if len(p.Approve) == 0 {
					t.Fatal("no approve rules parsed")
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse accepted %q", tc.doc)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestMatchArgGlob(t *testing.T) {
	cases := []struct {
		glob, value string
		want        bool
	}{
		{"secrets/**", "secrets/key", true},
		{"secrets/**", "secrets/a/b/c", true},
		{"secrets/**", "secrets", true},
		{"secrets/**", "./secrets/key", true},
		{"secrets/**", "secrets//key", true},
		{"secrets/**", "a/../secrets/key", true},
		{"secrets/**", "../outside", true}, // climbs out: fails closed
		{"secrets/**", "public/key", false},
		{"secrets/**", "secretsx/key", false},
		{"*.env", ".env", true},
		{"**/.ssh/*", "home/u/.ssh/id_rsa", true},
		{"prod-*", "prod-eu", true},
		{"prod-*", "staging", false},
		{"/etc/**", "/etc/passwd", true},
		{"**/**/**/**/**/x", strings.Repeat("a/", 2000) + "y", false},
	}
	for _, tc := range cases {
		if got := policy.MatchArgGlob(tc.glob, tc.value); got != tc.want {
			t.Errorf("MatchArgGlob(%q, %q) = %v, want %v", tc.glob, tc.value, got, tc.want)
		}
	}
}

func TestGrantReachesHost(t *testing.T) {
	cases := []struct {
		grant []string
		glob  string
		want  bool
	}{
		{[]string{"api.example.com"}, "*.example.com", true},
		{[]string{"*.example.com"}, "*.example.com", true},
		{[]string{"*"}, "*.example.com", true},
		{[]string{"*.com"}, "*.example.com", true},
		{[]string{"example.com"}, "*.example.com", false},
		{[]string{"api.example.org"}, "*.example.com", false},
		{[]string{"10.0.0.7"}, "*", true},
		{[]string{"10.0.0.7"}, "*.example.com", false},
		{nil, "*", false},
	}
	for _, tc := range cases {
		g := &policy.Grant{}
		for _, h := range tc.grant {
			r, err := policy.ParseHostRule(h)
			if err != nil {
				t.Fatal(err)
			}
			g.Hosts = append(g.Hosts, r)
		}
		glob, err := policy.NormalizeApproveHost(tc.glob)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.ReachesHost(glob); got != tc.want {
			t.Errorf("grant %v ReachesHost(%q) = %v, want %v", tc.grant, tc.glob, got, tc.want)
		}
	}
}

// TestApproveErrorLine: a problem in an approve rule names the line of
// the file, in YAML and in JSON.
func TestApproveErrorLine(t *testing.T) {
	cases := []struct {
		name, file, doc, want string
	}{
		{"yaml", "policy.yaml", "workspace: .\napprove:\n  - tools: [\"fs:write\"]\n  - tools: [\"web:*\"]\n    timeoutSeconds: 5000\n", "policy.yaml:5: /approve/1/timeoutSeconds"},
		{"yaml schema", "policy.yaml", "approve:\n  - tools: [\"fs:write\"]\n    whne: {}\n", "policy.yaml:2: /approve/0"},
		{"json", "policy.json", "{\n  \"approve\": [\n    {\"tools\": [\"fs:write\"],\n     \"when\": {\"hosts\": [\"ex*ample.com\"]}}\n  ]\n}\n", "policy.json:4: /approve/0/when/hosts/0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policy.Parse([]byte(tc.doc), tc.file)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want %q", err, tc.want)
			}
		})
	}
}
