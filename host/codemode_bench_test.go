package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
)

// BenchmarkCodeMode measures code:starlark from a warm pool, in one run:
// first-call-ns is a program's start (host.Call) to the start of its
// first inner call; direct-ns is host.Call of core:echo; inner-ns is one
// inner call of core:echo inside a program ((a program of 50 calls − an
// empty program) / 50); overhead-ns is inner-ns − direct-ns. Medians
// over b.N rounds.
func BenchmarkCodeMode(b *testing.B) {
	h := codeHost(b, `{maxCalls: "1000"}`)
	ctx := context.Background()
	const n = 50
	first := "result = tools.core.echo(n = 1)"
	empty := "result = 1"
	loop := fmt.Sprintf("for i in range(%d):\n    tools.core.echo(n = i)\nresult = 1", n)
	call := func(ctx context.Context, code string) time.Duration {
		args, _ := json.Marshal(map[string]any{"code": code})
		start := time.Now()
		if env := h.Call(ctx, "code:starlark", args); env.Error != nil {
			b.Fatal(env.Error)
		}
		return time.Since(start)
	}
	echo := json.RawMessage(`{"n":1}`)
	for range 3 { // warm the pools of both tools
		call(ctx, loop)
	}
	var firsts, directs, empties, loops []float64
	b.ResetTimer()
	for b.Loop() {
		var start time.Time
		var reached time.Duration
		scoped := host.WithCodeScope(ctx, host.CodeScope{Allowed: func(string) bool {
			if reached == 0 {
				reached = time.Since(start)
			}
			return true
		}})
		start = time.Now()
		call(scoped, first)
		firsts = append(firsts, float64(reached))
		t := time.Now()
		if env := h.Call(ctx, "core:echo", echo); env.Error != nil {
			b.Fatal(env.Error)
		}
		directs = append(directs, float64(time.Since(t)))
		empties = append(empties, float64(call(ctx, empty)))
		loops = append(loops, float64(call(ctx, loop)))
	}
	inner := (median(loops) - median(empties)) / n
	b.ReportMetric(median(firsts), "first-call-ns")
	b.ReportMetric(median(directs), "direct-ns")
	b.ReportMetric(inner, "inner-ns")
	b.ReportMetric(inner-median(directs), "overhead-ns")
}
