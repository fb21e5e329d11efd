package wasm

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
)

// BenchmarkCallSetup measures the runner's own per-call work around the
// guest: the call context, buffers, mounts, module config, classification
// and cleanup, without instantiating anything.
func BenchmarkCallSetup(b *testing.B) {
	ws := b.TempDir()
	tool := &manifest.Tool{ToolID: "bench:setup", Dir: b.TempDir()}
	grant := &policy.Grant{
		ToolID: tool.ToolID, Workspace: ws, ToolDir: tool.Dir, CacheDir: b.TempDir(),
		Read:   []policy.PathRule{{Root: policy.RootTool, Pattern: "**"}},
		Limits: policy.Limits{Timeout: time.Minute, MemoryBytes: 1 << 20, MaxOutputBytes: 1 << 20},
	}
	mounts, err := mountPlan(tool, grant)
	if err != nil {
		b.Fatal(err)
	}
	r := &Runner{logger: hclog.NewNullLogger()}
	p, err := r.newPrepared(tool, grant, mounts, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	input := []byte(`{"message":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		ctx, stop, release := callContext(context.Background(), p.limits.Timeout)
		c, err := p.newCall(stop)
		if err != nil {
			b.Fatal(err)
		}
		_ = p.moduleConfig(ctx, c, input)
		_, _ = c.stdout.Write(input)
		_ = c.close()
		if _, err := p.result(c, nil, context.Cause(ctx)); err != nil {
			b.Fatal(err)
		}
		p.release(c)
		release()
	}
}
