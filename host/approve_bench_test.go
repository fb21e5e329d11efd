package host_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/approval"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/runner"
)

// BenchmarkApproveHook measures what the approve rules cost a call of
// core:echo on a runner that answers at once (the host's own work, as in
// BenchmarkHostOverhead, so that the hook is not lost in the guest's
// time): "none" is a policy without rules (the reference), "other-tools"
// has rules that name other tools, "remembered" a rule that matches and
// a remembered "allow" decision.
func BenchmarkApproveHook(b *testing.B) {
	ctx := context.Background()
	args := json.RawMessage(`{"a":1,"b":"two"}`)
	for _, tc := range []struct{ name, policy string }{
		{"none", ""},
		{"other-tools", "approve:\n  - tools: [\"fs:write\", \"mcp:github.*\"]\n    when: {write: true}\n  - tools: [\"web:*\"]\n"},
		{"remembered", "approve:\n  - tools: [\"core:echo\"]\n    when: {args: {b: \"t*\"}}\n"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			br, err := approval.NewBroker(approval.Options{})
			if err != nil {
				b.Fatal(err)
			}
			h, err := host.New(ctx, host.Options{Dirs: []string{hosttest.Toolpacks(b)}, Policy: hosttest.Policy(b, tc.policy), CacheDir: hosttest.CacheDir(b), Approvals: br})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close(ctx)
			defer host.SetRunner(h, "wasm:wasi-command", fakeRunner{run: func(req runner.Request) runner.Result {
				return runner.Result{Output: req.Input}
			}})()
			if tc.name == "remembered" {
				events, stop, _ := br.Subscribe("")
				go func() {
					ev := <-events
					_, _, _ = br.Decide(ev.Request.Tenant, ev.Request.ID, approval.Allow, 60, "bench")
					stop()
				}()
			}
			if env := h.Call(ctx, "core:echo", args); env.Error != nil { // prepares the tool
				b.Fatal(env.Error)
			}
			for b.Loop() {
				if env := h.Call(ctx, "core:echo", args); env.Error != nil {
					b.Fatal(env.Error)
				}
			}
		})
	}
}
