package workflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
)

// chainFlow is a workflow of n core:echo nodes, each passing on the
// previous one's x.
func chainFlow(n int) string {
	var nodes []string
	for i := range n {
		src := "${inputs.x}"
		if i > 0 {
			src = fmt.Sprintf("${nodes.n%d.output.x}", i-1)
		}
		nodes = append(nodes, fmt.Sprintf(`{"id":"n%d","tool":"core:echo","args":{"x":"%s"}}`, i, src))
	}
	return fmt.Sprintf(`{"id":"chain","description":"d","interfaceInputs":{"x":{"dataFlowType":"STRING","required":true}},"interfaceOutputs":{"o":{"dataFlowType":"STRING"}},"outputs":{"o":"${nodes.n%d.output.x}"},"nodes":[%s]}`, n-1, strings.Join(nodes, ","))
}

// BenchmarkChain compares a 10-node chain of core:echo run as a workflow
// with the same 10 calls made one after another through host.Call: the
// difference divided by 10 is the engine's cost per node.
func BenchmarkChain(b *testing.B) {
	h := newHost(b, writeFlows(b, map[string]string{"chain.workflow.json": chainFlow(10)}))
	ctx := context.Background()
	in := json.RawMessage(`{"x":"hello"}`)
	if env := h.Call(ctx, "workflow:chain", in); env.Error != nil || string(env.Output) != `"hello"` {
		b.Fatalf("%+v %s", env.Error, env.Output)
	}
	b.Run("workflow", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if env := h.Call(ctx, "workflow:chain", in); env.Error != nil {
				b.Fatal(env.Error)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for range 10 {
				if env := h.Call(ctx, "core:echo", in); env.Error != nil {
					b.Fatal(env.Error)
				}
			}
		}
	})
}

// BenchmarkIndependent compares 4 independent text:stats nodes on a
// 64 KiB text, run as a workflow (in parallel), with the same 4 calls made
// one after another, and with the 4 calls made at once without a
// workflow (the host's own ceiling).
func BenchmarkIndependent(b *testing.B) {
	var nodes []string
	for i := range 4 {
		nodes = append(nodes, fmt.Sprintf(`{"id":"s%d","tool":"text:stats","args":{"text":"${inputs.t}","top":%d}}`, i, i+1))
	}
	flow := `{"id":"fan","description":"d","interfaceInputs":{"t":{"dataFlowType":"STRING","required":true}},"interfaceOutputs":{"o":{"dataFlowType":"INTEGER"}},"outputs":{"o":"${nodes.s3.output.words}"},"nodes":[` + strings.Join(nodes, ",") + `]}`
	h := newHost(b, writeFlows(b, map[string]string{"fan.workflow.json": flow}))
	ctx := context.Background()
	text := strings.Repeat("the quick brown fox jumps over the lazy dog ", 64<<10/44)
	in, _ := json.Marshal(map[string]string{"t": text})
	if env := h.Call(ctx, "workflow:fan", in); env.Error != nil {
		b.Fatal(env.Error)
	}
	b.Run("workflow", func(b *testing.B) {
		for b.Loop() {
			if env := h.Call(ctx, "workflow:fan", in); env.Error != nil {
				b.Fatal(env.Error)
			}
		}
	})
	// The ceiling: the same 4 calls from 4 goroutines, no workflow.
	b.Run("concurrent", func(b *testing.B) {
		for b.Loop() {
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Go(func() {
					args, _ := json.Marshal(map[string]any{"text": text, "top": i + 1})
					if env := h.Call(ctx, "text:stats", args); env.Error != nil {
						b.Error(env.Error)
					}
				})
			}
			wg.Wait()
		}
	})
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			for i := range 4 {
				args, _ := json.Marshal(map[string]any{"text": text, "top": i + 1})
				if env := h.Call(ctx, "text:stats", args); env.Error != nil {
					b.Fatal(env.Error)
				}
			}
		}
	})
}

// BenchmarkIndependentWaiting is BenchmarkIndependent for nodes that wait
// (a Go tool sleeping 2 ms, like a call to a remote service): the
// workflow against the same 4 calls one after another.
func BenchmarkIndependentWaiting(b *testing.B) {
	type in struct {
		N int `json:"n"`
	}
	wait := host.Func(host.FuncSpec{ID: "app:wait", Description: "Waits 2 ms."}, func(ctx context.Context, a in) (map[string]int, error) {
		select {
		case <-time.After(2 * time.Millisecond):
		case <-ctx.Done():
		}
		return map[string]int{"n": a.N}, nil
	})
	var nodes []string
	for i := range 4 {
		nodes = append(nodes, fmt.Sprintf(`{"id":"w%d","tool":"app:wait","args":{"n":%d}}`, i, i))
	}
	flow := `{"id":"waits","description":"d","interfaceOutputs":{"o":{"dataFlowType":"OBJECT"}},"outputs":{"o":"${nodes.w3.output}"},"nodes":[` + strings.Join(nodes, ",") + `]}`
	h := newHost(b, writeFlows(b, map[string]string{"waits.workflow.json": flow}), wait)
	ctx := context.Background()
	b.Run("workflow", func(b *testing.B) {
		for b.Loop() {
			if env := h.Call(ctx, "workflow:waits", nil); env.Error != nil {
				b.Fatal(env.Error)
			}
		}
	})
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			for i := range 4 {
				if env := h.Call(ctx, "app:wait", json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))); env.Error != nil {
					b.Fatal(env.Error)
				}
			}
		}
	})
}
