package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/internal/cputime"
)

// BenchmarkCodeMode measures the code tools from a warm pool, in one run
// per language: first-call-ns is a program's start (host.Call) to the
// start of its first inner call; direct-ns is host.Call of core:echo;
// inner-ns is one inner call of core:echo inside a program ((a program
// of 50 calls − an empty program) / 50); overhead-ns is inner-ns −
// direct-ns. guest-ns is the median time from the end of one inner call
// to the start of the next inside the loop (the interpreter's share:
// encoding the arguments, decoding the answer, the loop itself), host-ns
// the median of the inner calls themselves, and step-overhead-ns is
// guest-ns + host-ns − direct-ns: the overhead from per-call medians,
// which a loaded machine's pauses (a whole program's time takes them
// all in) do not move. cpu-inner-ns is inner-ns in the process's CPU
// time (the pools' background work included). Medians over b.N rounds
// (direct-ns: 5 calls a round).
func BenchmarkCodeMode(b *testing.B) {
	const n = 50
	langs := []struct{ tool, first, empty, loop string }{
		{"code:starlark", "result = tools.core.echo(n = 1)", "result = 1",
			fmt.Sprintf("for i in range(%d):\n    tools.core.echo(n = i)\nresult = 1", n)},
		{"code:js", "return tools.core.echo({n: 1})", "return 1",
			fmt.Sprintf("for (let i = 0; i < %d; i++) { tools.core.echo({n: i}) }\nreturn 1", n)},
	}
	h := codeHostJS(b, `{maxCalls: "1000"}`, `{maxCalls: "1000"}`)
	for _, lang := range langs {
		b.Run(lang.tool[len("code:"):], func(b *testing.B) {
			ctx := context.Background()
			call := func(ctx context.Context, code string) time.Duration {
				args, _ := json.Marshal(map[string]any{"code": code})
				start := time.Now()
				if env := h.Call(ctx, lang.tool, args); env.Error != nil {
					b.Fatal(env.Error)
				}
				return time.Since(start)
			}
			// Inside the loop: the time between inner calls (guest) and
			// of each inner call (host).
			var guests, hosts []float64
			var mark time.Time
			timed := host.WithCodeScope(ctx, host.CodeScope{
				Allowed: func(string) bool {
					if !mark.IsZero() {
						guests = append(guests, float64(time.Since(mark)))
					}
					mark = time.Now()
					return true
				},
				Step: func(host.CodeStep) {
					hosts = append(hosts, float64(time.Since(mark)))
					mark = time.Now()
				},
			})
			echo := json.RawMessage(`{"n":1}`)
			for range 3 { // warm the pools of both tools
				call(ctx, lang.loop)
			}
			var firsts, directs, empties, loops, cpuLoops, cpuEmpties []float64
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
				call(scoped, lang.first)
				firsts = append(firsts, float64(reached))
				for range 5 {
					t := time.Now()
					if env := h.Call(ctx, "core:echo", echo); env.Error != nil {
						b.Fatal(env.Error)
					}
					directs = append(directs, float64(time.Since(t)))
				}
				empties = append(empties, float64(call(ctx, lang.empty)))
				c := cputime.Process()
				loops = append(loops, float64(call(ctx, lang.loop)))
				cpuLoops = append(cpuLoops, float64(cputime.Process()-c))
				c = cputime.Process()
				call(ctx, lang.empty)
				cpuEmpties = append(cpuEmpties, float64(cputime.Process()-c))
				mark = time.Time{}
				call(timed, lang.loop)
			}
			inner := (median(loops) - median(empties)) / n
			b.ReportMetric(median(firsts), "first-call-ns")
			b.ReportMetric(median(directs), "direct-ns")
			b.ReportMetric(inner, "inner-ns")
			b.ReportMetric(inner-median(directs), "overhead-ns")
			b.ReportMetric(median(guests), "guest-ns")
			b.ReportMetric(median(hosts), "host-ns")
			b.ReportMetric(median(guests)+median(hosts)-median(directs), "step-overhead-ns")
			b.ReportMetric((median(cpuLoops)-median(cpuEmpties))/n, "cpu-inner-ns")
		})
	}
}
