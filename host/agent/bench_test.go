package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/agent"
)

// BenchmarkIteration measures one loop iteration (a replayed model turn
// with one tool call, its record, the next prompt) with a Go no-op tool,
// and in the same run the same tool called directly through host.Call:
// the difference is the loop's own overhead per iteration.
func BenchmarkIteration(b *testing.B) {
	ctx := context.Background()
	type none struct{}
	noop := host.Func("b:noop", "Does nothing.", func(context.Context, none) (none, error) { return none{}, nil })
	h, err := host.New(ctx, host.Options{Tools: []host.Tool{noop}, CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(ctx)
	const turns = 50
	transcript := strings.Repeat(`{"tool_calls":[{"name":"b__noop","arguments":{}}]}`+"\n", turns-1) + `{"content":"done"}`
	b.Run("loop", func(b *testing.B) {
		for b.Loop() {
			res, err := agent.Run(ctx, h, "x", agent.Options{Provider: replay(b, transcript), MaxIterations: turns})
			if err != nil || res.Status != "done" {
				b.Fatal(err, res.Status)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*turns), "ns/iteration")
	})
	b.Run("calls", func(b *testing.B) {
		for b.Loop() {
			for range turns - 1 {
				h.Call(ctx, "b:noop", nil)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*turns), "ns/iteration")
	})
}
