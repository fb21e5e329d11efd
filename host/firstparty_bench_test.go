package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// firstPartyCalls are typical calls of every first-party wasm tool that
// runs without the network, in a workspace made by firstPartyHost.
var firstPartyCalls = []struct{ tool, args string }{
	{"core:echo", `{"message":"hello"}`},
	{"data:csv-to-json", `{"csv":"name,age,member\nAna,34,true\nBo,007,false\n","typed":true}`},
	{"hash:digest", `{"text":"hello"}`},
	{"hash:digest", `{"path":"hello.txt"}`},
	{"json:query", `{"filter":".orders[] | select(.total > 10) | .id","input":{"orders":[{"id":1,"total":25.5},{"id":2,"total":7},{"id":3,"total":12}]}}`},
	{"fs:list", `{"glob":"**/*.txt"}`},
	{"fs:read", `{"path":"hello.txt"}`},
	{"fs:write", `{"path":"/tmp/notes/summary.md","content":"# Summary\n"}`},
	{"text:diff", `{"from":"a\nb\n","to":"a\nc\n"}`},
	{"text:regex", `{"pattern":"(?P<year>\\d{4})-\\d{2}","text":"Started 2024-03-01."}`},
	{"text:stats", `{"text":"The cat sat. The cat ran away!\n\nA dog barked.","top":2}`},
}

// firstPartyHost is a host over the toolpacks with a small workspace
// (hello.txt, notes/todo.txt) readable by every tool.
func firstPartyHost(t testing.TB) *host.Host {
	t.Helper()
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"hello.txt": "hello world\n", "notes/todo.txt": "ship it\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := hosttest.Policy(t, "workspace: "+ws+"\nfileAccess:\n  allowRead: [\"**\"]\n  allowWrite: [\"out/**\"]\n")
	return hosttest.NewHost(t, p, hosttest.Toolpacks(t))
}

// callName is a benchmark name for one of firstPartyCalls.
func callName(tool, args string) string {
	var m map[string]any
	_ = json.Unmarshal([]byte(args), &m)
	if _, ok := m["path"]; ok && tool == "hash:digest" {
		return tool + "/file"
	}
	return tool
}

// BenchmarkFirstParty calls every first-party wasm tool (fresh state per
// call) with core:echo as the reference in the same run: a tool that
// touches files should cost about what echo costs. Each tool's
// "<name>/raw-reused" is the reference for its own work: the same module
// on a bare wazero runtime, one instance called again and again with
// nothing restored, metered or checked (the workspace mounted at
// /workspace, a /tmp kept across calls).
func BenchmarkFirstParty(b *testing.B) {
	ctx := context.Background()
	h := firstPartyHost(b)
	ws := h.Policy().Workspace
	for _, c := range firstPartyCalls {
		name := callName(c.tool, c.args)
		b.Run(name, func(b *testing.B) {
			args := json.RawMessage(c.args)
			if env := h.Call(ctx, c.tool, args); env.Error != nil {
				b.Fatal(env.Error)
			}
			for b.Loop() {
				if env := h.Call(ctx, c.tool, args); env.Error != nil {
					b.Fatal(env.Error)
				}
			}
		})
		b.Run(name+"/raw-reused", func(b *testing.B) {
			tool, err := h.Tool(c.tool)
			if err != nil {
				b.Fatal(err)
			}
			call := rawReused(b, tool.ModulePath(), ws)
			args := []byte(c.args)
			call(args)
			for b.Loop() {
				call(args)
			}
		})
	}
	b.StopTimer()
	for _, th := range h.Health() {
		if th.Pool != nil && th.Calls > 0 {
			b.Logf("%s: %d calls, pool %+v", th.ID, th.Calls, *th.Pool)
		}
	}
}

// BenchmarkThroughput runs core:echo from 1, 2, 4 and 8 goroutines on
// one host (whatever GOMAXPROCS is): calls per second and the p50 / p99
// latency of single calls, to compare with one goroutine.
func BenchmarkThroughput(b *testing.B) {
	ctx := context.Background()
	h := hosttest.NewHost(b, nil, hosttest.Toolpacks(b))
	args := json.RawMessage(`{"message":"hello"}`)
	if env := h.Call(ctx, "core:echo", args); env.Error != nil {
		b.Fatal(env.Error)
	}
	for _, n := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("goroutines=%d", n), func(b *testing.B) {
			hosttest.Load(b, n, func() error {
				if env := h.Call(ctx, "core:echo", args); env.Error != nil {
					return env.Error
				}
				return nil
			})
			b.StopTimer()
			for _, th := range h.Health() {
				if th.ID == "core:echo" && th.Pool != nil {
					b.Logf("pool %+v", *th.Pool)
				}
			}
		})
	}
}

// BenchmarkNew is host.New over the core toolpack (one tool), nothing
// called: what a process pays before its first call.
func BenchmarkNew(b *testing.B) {
	ctx := context.Background()
	dir := filepath.Join(hosttest.Toolpacks(b), "core")
	cacheDir := hosttest.CacheDir(b)
	for b.Loop() {
		h, err := host.New(ctx, host.Options{Dirs: []string{dir}, CacheDir: cacheDir})
		if err != nil {
			b.Fatal(err)
		}
		_ = h.Close(ctx)
	}
}

// BenchmarkFirstCalls is a new host's first 16 core:echo calls (the
// compilation served from the on-disk caches): the first call's time and
// the median of calls 2–16, which should already be on the fast path.
func BenchmarkFirstCalls(b *testing.B) {
	ctx := context.Background()
	dir := filepath.Join(hosttest.Toolpacks(b), "core")
	cacheDir := hosttest.CacheDir(b)
	args := json.RawMessage(`{"message":"hello"}`)
	var first, rest []time.Duration
	for b.Loop() {
		h, err := host.New(ctx, host.Options{Dirs: []string{dir}, CacheDir: cacheDir})
		if err != nil {
			b.Fatal(err)
		}
		var took []time.Duration
		for range 16 {
			t0 := time.Now()
			if env := h.Call(ctx, "core:echo", args); env.Error != nil {
				b.Fatal(env.Error)
			}
			took = append(took, time.Since(t0))
		}
		_ = h.Close(ctx)
		first = append(first, took[0])
		slices.Sort(took[1:])
		rest = append(rest, took[1+len(took[1:])/2])
	}
	slices.Sort(first)
	slices.Sort(rest)
	b.ReportMetric(float64(first[len(first)/2].Microseconds())/1000, "call1-ms")
	b.ReportMetric(float64(rest[len(rest)/2].Microseconds()), "calls2-16-µs")
}

// BenchmarkMemory loads every toolpack, warms each first-party tool, then
// calls them in turn: B/op and allocs/op are per call, and it reports the
// process's resident memory and the Go heap in use with everything loaded
// and warm.
func BenchmarkMemory(b *testing.B) {
	ctx := context.Background()
	h := firstPartyHost(b)
	for _, c := range firstPartyCalls {
		for range 8 {
			if env := h.Call(ctx, c.tool, json.RawMessage(c.args)); env.Error != nil {
				b.Fatal(env.Error)
			}
		}
	}
	i := 0
	for b.Loop() {
		c := firstPartyCalls[i%len(firstPartyCalls)]
		i++
		if env := h.Call(ctx, c.tool, json.RawMessage(c.args)); env.Error != nil {
			b.Fatal(env.Error)
		}
	}
	b.StopTimer()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	if rss := residentBytes(); rss > 0 {
		b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
	}
}

// residentBytes returns the process's resident set size (VmRSS), 0 when
// /proc is not there.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscan(rest, &kb); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// rawReused instantiates the reactor module at path on a bare wazero
// runtime (no meter, no snapshot, no file rules: ws mounted at
// /workspace, a temporary folder at /tmp) and returns a function that
// calls it once with args, failing b on a failed call.
func rawReused(b *testing.B, path, ws string) func(args []byte) {
	b.Helper()
	ctx := context.Background()
	code, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(hosttest.CacheDir(b), "wazero"))
	if err != nil {
		b.Fatal(err)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCompilationCache(cache))
	b.Cleanup(func() { _ = rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	in := &bytes.Reader{}
	var out bytes.Buffer
	fsc := wazero.NewFSConfig().WithDirMount(ws, "/workspace").WithDirMount(b.TempDir(), "/tmp")
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions().WithStdin(in).WithStdout(&out).
		WithFSConfig(fsc).WithSysNanotime().WithSysWalltime()
	m, err := rt.InstantiateWithConfig(ctx, code, cfg)
	if err != nil {
		b.Fatal(err)
	}
	for _, fn := range []string{"_initialize", "agenthost_init"} {
		if _, err := m.ExportedFunction(fn).Call(ctx); err != nil {
			b.Fatalf("%s: %v", fn, err)
		}
	}
	call := m.ExportedFunction("agenthost_call")
	return func(args []byte) {
		in.Reset(args)
		out.Reset()
		res, err := call.Call(ctx)
		if err != nil || len(res) != 1 || res[0] != 0 {
			b.Fatalf("call: %v %v: %s", res, err, out.Bytes())
		}
	}
}

// BenchmarkEarlyCalls is a new host's first calls of core:echo, as in a
// new process (the module and its start-up from the on-disk caches): the
// first call, the median of calls 2–5 and, on the same host after 300
// more calls, the steady-state median, with the ratio of the two medians
// (per host, then the median over hosts).
func BenchmarkEarlyCalls(b *testing.B) {
	ctx := context.Background()
	dir := filepath.Join(hosttest.Toolpacks(b), "core")
	cacheDir := hosttest.CacheDir(b)
	args := json.RawMessage(`{"message":"hello"}`)
	timed := func(h *host.Host) time.Duration {
		t0 := time.Now()
		if env := h.Call(ctx, "core:echo", args); env.Error != nil {
			b.Fatal(env.Error)
		}
		return time.Since(t0)
	}
	var first, early, steady, ratio []float64
	byCall := make([][]float64, 4) // calls 2–5, each over the hosts
	for b.Loop() {
		h, err := host.New(ctx, host.Options{Dirs: []string{dir}, CacheDir: cacheDir})
		if err != nil {
			b.Fatal(err)
		}
		first = append(first, float64(timed(h).Microseconds())/1000)
		var e []float64
		for i := range 4 {
			d := float64(timed(h).Nanoseconds()) / 1000
			e = append(e, d)
			byCall[i] = append(byCall[i], d)
		}
		for range 300 {
			timed(h)
		}
		var s []float64
		for range 100 {
			s = append(s, float64(timed(h).Nanoseconds())/1000)
		}
		_ = h.Close(ctx)
		early, steady = append(early, median(e)), append(steady, median(s))
		ratio = append(ratio, median(e)/median(s))
	}
	b.ReportMetric(median(first), "call1-ms")
	b.ReportMetric(median(early), "calls2-5-µs")
	b.ReportMetric(median(steady), "steady-µs")
	b.ReportMetric(median(ratio), "early/steady")
	b.Logf("calls 2–5, each the median over %d hosts: %.0f, %.0f, %.0f, %.0f µs", len(first), median(byCall[0]), median(byCall[1]), median(byCall[2]), median(byCall[3]))
}

// BenchmarkMixedLoad calls the first-party calls round-robin on one host
// with the default pool budget, and each one alone (back to back) on the
// same host, in alternating passes: for each call the ratio of its median
// round-robin to its median alone. It reports the worst call's ratio and
// the median ratio, each the median over passes.
func BenchmarkMixedLoad(b *testing.B) {
	ctx := context.Background()
	h := firstPartyHost(b)
	if rep := h.Warm(ctx, host.WarmOptions{}); len(rep.Failed) > 0 {
		b.Fatalf("warm: %+v", rep)
	}
	n := len(firstPartyCalls)
	timed := func(i int) float64 {
		c := firstPartyCalls[i]
		t0 := time.Now()
		if env := h.Call(ctx, c.tool, json.RawMessage(c.args)); env.Error != nil {
			b.Fatal(env.Error)
		}
		return float64(time.Since(t0).Nanoseconds()) / 1000
	}
	for i := range n { // every pool in use before the first pass
		for range 20 {
			timed(i)
		}
	}
	mixedRounds(b, n, timed)
}

// mixedRounds measures each of the n calls of firstPartyCalls (timed(i)
// returns its µs) alone, then all round-robin, on every b.Loop pass, and
// reports the worst and the median ratio of round-robin to alone, with
// each call's ratio in the log.
func mixedRounds(b *testing.B, n int, timed func(int) float64) {
	var worst, med []float64
	perCall, aloneUs, mixedUs := make([][]float64, n), make([][]float64, n), make([][]float64, n)
	for b.Loop() {
		alone := make([]float64, n)
		for i := range n {
			var d []float64
			for range 30 {
				d = append(d, timed(i))
			}
			alone[i] = median(d[10:])
		}
		mixed := make([][]float64, n)
		for range 30 {
			for i := range n {
				mixed[i] = append(mixed[i], timed(i))
			}
		}
		var r []float64
		for i := range n {
			m := median(mixed[i])
			q := m / alone[i]
			r = append(r, q)
			perCall[i] = append(perCall[i], q)
			aloneUs[i], mixedUs[i] = append(aloneUs[i], alone[i]), append(mixedUs[i], m)
		}
		worst = append(worst, slices.Max(r))
		med = append(med, median(r))
	}
	b.ReportMetric(median(worst), "worst-ratio")
	b.ReportMetric(median(med), "median-ratio")
	for i, c := range firstPartyCalls {
		b.Logf("%-18s round-robin / alone %.2f (%.0f / %.0f µs)", callName(c.tool, c.args), median(perCall[i]), median(mixedUs[i]), median(aloneUs[i]))
	}
}

// median returns the median of v (v is reordered).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[len(v)/2]
}
