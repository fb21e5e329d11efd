package approval_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/approval"
	"github.com/agenthost/agenthost/host/policy"
)

// BenchmarkRules measures the work a call pays for the approve rules:
// "unnamed" is a tool no rule names (all a call of another tool pays),
// "match" a call matched on its arguments, "remembered" the lookup of a
// remembered allow.
func BenchmarkRules(b *testing.B) {
	rs := approval.NewRules([]policy.ApproveRule{
		{Tools: []string{"fs:write", "mcp:github.*"}, When: &policy.ApproveWhen{Write: true}},
		{Tools: []string{"web:*"}, When: &policy.ApproveWhen{Args: map[string]string{"url": "https://*.example.com/**"}}},
		{Tools: []string{"core:echo"}, When: &policy.ApproveWhen{Args: map[string]string{"path": "secrets/**"}}},
	})
	call := approval.Call{Tenant: "acme", Tool: "core:echo", Args: json.RawMessage(`{"path":"secrets/key","text":"hello"}`)}
	b.Run("unnamed", func(b *testing.B) {
		for b.Loop() {
			if rs.Names("text:stats") {
				b.Fatal("named")
			}
		}
	})
	b.Run("match", func(b *testing.B) {
		for b.Loop() {
			if _, ok := rs.Match(call); !ok {
				b.Fatal("no match")
			}
		}
	})
	b.Run("remembered", func(b *testing.B) {
		br, _ := approval.NewBroker(approval.Options{})
		m, _ := rs.Match(call)
		m.Timeout = time.Minute
		events, stop, _ := br.Subscribe("")
		go func() {
			ev := <-events
			_, _, _ = br.Decide(ev.Request.Tenant, ev.Request.ID, approval.Allow, 60, "bench")
			stop()
		}()
		if _, err := br.Ask(b.Context(), approval.Request{Tenant: "acme", Tool: "core:echo"}, m); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, ok := br.Remembered("acme", "core:echo", m); !ok {
				b.Fatal("not remembered")
			}
		}
	})
}
