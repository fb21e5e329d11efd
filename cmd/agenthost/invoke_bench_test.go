package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkInvoke is a process start to result: `agenthost invoke
// core:echo` with warm on-disk caches, against `wazero run` of the same
// plugin built as a plain command (its compilation cached too), the
// two interleaved. It reports each median and the ratio.
func BenchmarkInvoke(b *testing.B) {
	tmp := b.TempDir()
	bin := filepath.Join(tmp, "agenthost")
	wz := filepath.Join(tmp, "wazero")
	echo := filepath.Join(tmp, "echo.wasm")
	for _, build := range [][]string{
		{"go", "build", "-o", bin, "."},
		{"go", "build", "-o", wz, "github.com/tetratelabs/wazero/cmd/wazero"},
	} {
		if out, err := exec.Command(build[0], build[1:]...).CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", build, err, out)
		}
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", echo, "../../plugins/echo")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build echo command: %v\n%s", err, out)
	}
	args := `{"message":"hello"}`
	invoke := exec.Command(bin, "invoke", "--dir", "../../toolpacks/core", "--cache-dir", filepath.Join(tmp, "cache"), "core:echo", args)
	run := exec.Command(wz, "run", "-cachedir", filepath.Join(tmp, "wazero-cache"), echo)
	calls := map[string]func() *exec.Cmd{
		"agenthost-invoke": func() *exec.Cmd { return exec.Command(invoke.Path, invoke.Args[1:]...) },
		"wazero-run": func() *exec.Cmd {
			c := exec.Command(run.Path, run.Args[1:]...)
			c.Stdin = bytes.NewReader([]byte(args))
			return c
		},
	}
	names := []string{"wazero-run", "agenthost-invoke"}
	times := map[string][]time.Duration{}
	once := func(name string) time.Duration {
		c := calls[name]()
		t0 := time.Now()
		out, err := c.Output()
		d := time.Since(t0)
		if err != nil || !bytes.Contains(out, []byte("hello")) {
			b.Fatalf("%s: %v: %s", name, err, out)
		}
		return d
	}
	for _, n := range names {
		once(n) // warm the caches
	}
	b.ResetTimer()
	for b.Loop() {
		for _, n := range names {
			times[n] = append(times[n], once(n))
		}
	}
	b.StopTimer()
	med := map[string]float64{}
	for _, n := range names {
		ts := times[n]
		slices.Sort(ts)
		med[n] = float64(ts[len(ts)/2].Microseconds()) / 1000
		b.ReportMetric(med[n], n+"-ms")
	}
	b.ReportMetric(med["agenthost-invoke"]/med["wazero-run"], "invoke/wazero-run")
	b.ReportMetric(0, "ns/op")
}
