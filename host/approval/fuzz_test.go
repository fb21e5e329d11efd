package approval_test

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/agenthost/agenthost/host/approval"
	"github.com/agenthost/agenthost/host/policy"
)

// FuzzMatch feeds rules and arguments a model may write to Match: it
// never panics, and an argument the rule names with "**" always matches
// when it is a string (whatever its spelling).
func FuzzMatch(f *testing.F) {
	f.Add("path", "secrets/**", `{"path":"secrets/key"}`)
	f.Add("/o/0/t", "prod-*", `{"o":[{"t":"prod-eu"}]}`)
	f.Add("path", "**/**/**/x", `{"path":"a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/y"}`)
	f.Add("p", "[", `{"p":"["}`)
	f.Add("~", "*", `{"~":1e999}`)
	f.Fuzz(func(t *testing.T, name, glob, args string) {
		// A policy file is JSON or YAML: its names are UTF-8.
		if _, err := policy.ArgPath(name); err != nil || policy.ValidateArgGlob(glob) != nil || !utf8.ValidString(name) {
			return
		}
		rs := approval.NewRules([]policy.ApproveRule{{Tools: []string{"fs:*"}, When: &policy.ApproveWhen{Args: map[string]string{name: glob}}}})
		_, _ = rs.Match(approval.Call{Tool: "fs:write", Args: json.RawMessage(args)})
		if name[0] != '/' {
			b, _ := json.Marshal(map[string]any{name: args})
			if _, ok := approval.NewRules([]policy.ApproveRule{{Tools: []string{"fs:*"}, When: &policy.ApproveWhen{Args: map[string]string{name: "**"}}}}).Match(approval.Call{Tool: "fs:write", Args: b}); !ok {
				t.Fatalf("%q: ** did not match the string %q", name, args)
			}
		}
	})
}
