package script_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/cputime"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/script"
	"github.com/agenthost/agenthost/host/runner/wasm"
)

// BenchmarkWasmEcho is the reference for the bridge: the JSON echo tool
// of toolpacks/core as a WASM guest (Go, wasi-command) through the WASM
// runner, a fresh instance per call.
func BenchmarkWasmEcho(b *testing.B) {
	ctx := context.Background()
	tool, err := manifest.Load(filepath.Join("..", "..", "..", "toolpacks", "core", "echo.tool.json"))
	if err != nil {
		b.Skipf("core:echo toolpack unavailable: %v", err)
	}
	wr, err := wasm.New(ctx, wasm.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer wr.Close(ctx)
	grant := &policy.Grant{ToolID: tool.ToolID, Workspace: b.TempDir(), ToolDir: tool.Dir,
		Limits: policy.Limits{Timeout: 10 * time.Second, MemoryBytes: 256 << 20, MaxOutputBytes: 1 << 20}}
	p, err := wr.Prepare(ctx, tool, grant)
	if err != nil {
		b.Fatal(err)
	}
	input := []byte(`{"a":1,"b":"two"}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := p.Run(ctx, runner.Request{Input: input})
		if err != nil || res.Err != nil {
			b.Fatal(err, res.Err)
		}
	}
}

// BenchmarkBridge compares one call through the bridge (fresh $TMP,
// Landlock, namespaces, prlimit, scrubbed environment, capped output)
// with a bare spawn of the same interpreter on the same script, input and
// environment. Each iteration runs both, alternating which goes first, so
// that load on a shared machine hits both alike; the reported metrics are
// the medians of the per-iteration wall and CPU times and the overhead of
// isolation (isolated/bare - 1) computed from them.
//
// The interpreters are the system's (/usr/bin), not whatever PATH finds
// first: a pyenv Python whose site-packages hold a .pth hook that imports
// certifi spends 80-110 ms in start-up, in both arms, which would hide
// the overhead being measured.
func BenchmarkBridge(b *testing.B) {
	b.Setenv("PATH", "/usr/bin:/bin")
	r, err := script.New(script.Options{CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	input := []byte(`{"a":1,"b":"two"}`)
	for _, tc := range []struct{ lang, code string }{
		{script.LangPython, pyEcho},
		{script.LangNode, nodeEcho},
	} {
		prog := map[string]string{script.LangPython: "python3", script.LangNode: "node"}[tc.lang]
		if _, err := exec.LookPath(prog); err != nil {
			continue
		}
		b.Run(tc.lang, func(b *testing.B) {
			f := newFixtureB(b, tc.lang, tc.code)
			exe, err := script.InterpreterExe(r, tc.lang)
			if err != nil {
				b.Fatal(err)
			}
			p, err := r.Prepare(context.Background(), f.tool, f.grant)
			if err != nil {
				b.Fatal(err)
			}
			args := []string{filepath.Join(f.tool.Dir, f.tool.Handler.ScriptPath)}
			if tc.lang == script.LangPython {
				args = append([]string{"-B"}, args...)
			}
			bare := func() {
				dir, err := os.MkdirTemp("", "bench-bare-")
				if err != nil {
					b.Fatal(err)
				}
				defer os.RemoveAll(dir)
				cmd := exec.Command(exe, args...)
				cmd.Stdin = bytes.NewReader(input)
				cmd.Dir = dir
				cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir, "LANG=C.UTF-8"}
				if out, err := cmd.Output(); err != nil || len(out) == 0 {
					b.Fatal(err)
				}
			}
			isolated := func() {
				res, err := p.Run(context.Background(), runner.Request{Input: input})
				if err != nil || res.Err != nil {
					b.Fatal(err, res.Err)
				}
			}
			var tb, ti, cb, ci []time.Duration
			timed := func(f func(), wall, cpu *[]time.Duration) {
				c0 := cputime.WithChildren()
				start := time.Now()
				f()
				*wall = append(*wall, time.Since(start))
				*cpu = append(*cpu, cputime.WithChildren()-c0)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%2 == 0 {
					timed(bare, &tb, &cb)
					timed(isolated, &ti, &ci)
				} else {
					timed(isolated, &ti, &ci)
					timed(bare, &tb, &cb)
				}
			}
			mb, mi := median(tb), median(ti)
			b.ReportMetric(float64(mb.Microseconds())/1000, "bare-ms")
			b.ReportMetric(float64(mi.Microseconds())/1000, "isolated-ms")
			b.ReportMetric(100*(float64(mi)/float64(mb)-1), "overhead-%")
			ub, ui := median(cb), median(ci)
			b.ReportMetric(float64(ub.Microseconds())/1000, "bare-cpu-ms")
			b.ReportMetric(float64(ui.Microseconds())/1000, "isolated-cpu-ms")
			b.ReportMetric(100*(float64(ui)/float64(ub)-1), "cpu-overhead-%")
		})
	}
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
