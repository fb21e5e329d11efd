package policy_test

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/policy"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		// literals
		{"a.txt", "a.txt", true},
		{"a.txt", "b.txt", false},
		{"a.txt", "A.TXT", false},
		{"data/a.txt", "data/a.txt", true},
		{"data/a.txt", "data", false},
		{"data", "data/a.txt", false},
		// * stays within a segment
		{"*", "a", true},
		{"*", "", false},
		{"*", "a/b", false},
		{"*.txt", "notes.txt", true},
		{"*.txt", ".txt", false}, // hidden: "*" never matches a leading "."
		{"*.txt", "dir/notes.txt", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
		{"*", ".env", false},
		// ? is one character, never a slash
		{"?.txt", "a.txt", true},
		{"?.txt", "ab.txt", false},
		{"?.txt", "é.txt", true},
		{"a?b", "a/b", false},
		// ** crosses segments, including none
		{"**", "", true},
		{"**", "a", true},
		{"**", "a/b/c", true},
		{"data/**", "data", true},
		{"data/**", "data/a", true},
		{"data/**", "data/a/b", true},
		{"data/**", "datax/a", false},
		{"data/**", "other/data/a", false},
		{"**/*.md", "README.md", true},
		{"**/*.md", "docs/a/b.md", true},
		{"**/*.md", "docs/a/b.txt", false},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/y/c", false},
		{"a/**/b/**/c", "a/b/c", true},
		{"a/**/b/**/c", "a/1/b/2/3/c", true},
		{"a/**/b/**/c", "a/1/c/2/b", false},
		// the root
		{"**", ".", true},
		{"data/**", ".", false},
		// names that are not clean never match
		{"**", "..", false},
		{"**", "../etc/passwd", false},
		{"**", "data/../../etc/passwd", false},
		{"data/**", "data/../secret", false},
		{"*/*", "../x", false},
		{"**", "/etc/passwd", false},
		{"**", "a//b", false},
		{"**", "a/./b", false},
		{"**", "a/", false},
		{"**", "a\x00b", false},
		{"..", "..", false},
		{"../**", "../x", false},
		// encodings are not decoded: they are literal names
		{"data/**", "data/%2e%2e/secret", true},
		{"%2e%2e/**", "../x", false},
		{"data/**", "data/..%2fsecret", false}, // a hidden segment, not an escape
		{"data/*", "data/．．", true},
		{"secret/**", "data/%2e%2e/secret", false},
		// hidden names: only a pattern segment starting with "." matches
		// one (the default ceiling "**" granted .env, .ssh/id_rsa, .git/config)
		{"**", ".env", false},
		{"**", ".ssh/id_rsa", false},
		{"**", ".git/config", false},
		{"**", "src/.git/config", false},
		{"**", "a/.aws", false},
		{"*/**", ".config/app/x", false},
		{"?env", ".env", false},
		{".env", ".env", true},
		{".*", ".env", true},
		{".config/app/**", ".config/app/settings.json", true},
		{".config/**", ".config/.secret", false},
		{"**/.git/**", "src/.git/config", true},
		{"**/*.env", "a/.env", false},
		{"**", "notes/todo.md", true},
		{"a/**/b", "a/.x/b", false},
	}
	for _, tc := range tests {
		t.Run(tc.pattern+"|"+tc.name, func(t *testing.T) {
			if got := policy.Match(tc.pattern, tc.name); got != tc.want {
				t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
			}
		})
	}
}

func TestValidatePattern(t *testing.T) {
	tests := []struct {
		pattern string
		wantErr string // "" = valid
	}{
		{"**", ""},
		{"data/**", ""},
		{"**/*.md", ""},
		{"a?c/*.txt", ""},
		{"", "empty"},
		{"/etc/**", "absolute"},
		{"../x", "leaves its root"},
		{"data/../../x", "leaves its root"},
		{"./data", "\".\" segment"},
		{"data//x", "empty segment"},
		{"data/", "empty segment"},
		{"data\\x", "backslash"},
		{"a**", "whole path segment"},
		{"**.txt", "whole path segment"},
		{"a\x00", "NUL"},
		{strings.Repeat("a", 1025), "longer than"},
	}
	for _, tc := range tests {
		t.Run(tc.pattern, func(t *testing.T) {
			err := policy.ValidatePattern(tc.pattern)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ValidatePattern(%q) = %v, want nil", tc.pattern, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("ValidatePattern(%q) = %v, want error containing %q", tc.pattern, err, tc.wantErr)
			}
		})
	}
}

func TestParsePathRule(t *testing.T) {
	tests := []struct {
		in      string
		want    policy.PathRule
		wantErr bool
	}{
		{"data/**", policy.PathRule{Root: policy.RootWorkspace, Pattern: "data/**"}, false},
		{"$TOOL/cfg.json", policy.PathRule{Root: policy.RootTool, Pattern: "cfg.json"}, false},
		{"$CACHE/**", policy.PathRule{Root: policy.RootCache, Pattern: "**"}, false},
		{"$TMP/**", policy.PathRule{Root: policy.RootTmp, Pattern: "**"}, false},
		{"$TMP", policy.PathRule{Root: policy.RootTmp, Pattern: "**"}, false},
		{"$TMP/", policy.PathRule{}, true},
		{"$HOME/.ssh/**", policy.PathRule{}, true},
		{"$TOOLS/x", policy.PathRule{}, true},
		{"$TOOL/../x", policy.PathRule{}, true},
		{"/etc/passwd", policy.PathRule{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := policy.ParsePathRule(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParsePathRule(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if got != tc.want {
				t.Fatalf("ParsePathRule(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
			if err == nil && tc.in != "$TMP" {
				if s := got.String(); s != tc.in {
					t.Errorf("String() = %q, want %q", s, tc.in)
				}
			}
		})
	}
}
