package agent_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/llm"
)

// scripted plays turns back without the replay provider's check of each
// request against the providers' rules: that check grows with the
// conversation and is no part of the loop's cost.
type scripted struct {
	turns []llm.Response
	next  int
}

func (s *scripted) Complete(context.Context, llm.Request) (llm.Response, error) {
	t := s.turns[s.next]
	s.next++
	return t, nil
}

// BenchmarkIteration measures one loop iteration (a scripted model turn
// with one tool call, its record, the next prompt) with a Go no-op tool,
// and in the same run the same tool called directly through host.Call:
// the difference is the loop's own overhead per iteration.
func BenchmarkIteration(b *testing.B) {
	ctx := context.Background()
	type none struct{}
	noop := host.Func(host.FuncSpec{ID: "b:noop", Description: "Does nothing."}, func(context.Context, none) (none, error) { return none{}, nil })
	h, err := host.New(ctx, host.Options{Tools: []host.Tool{noop}, CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(ctx)
	const turns = 50
	var script []llm.Response
	for i := range turns - 1 {
		script = append(script, llm.Response{ToolCalls: []llm.ToolCall{{ID: fmt.Sprintf("c%d", i), Name: "b__noop", Arguments: "{}"}}})
	}
	script = append(script, llm.Response{Content: "done"})
	b.Run("loop", func(b *testing.B) {
		for b.Loop() {
			res, err := agent.Run(ctx, h, "x", agent.Options{Provider: &scripted{turns: script}, MaxIterations: turns})
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
