package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// fakeRunner is a func-field mock: Run answers from run.
type fakeRunner struct {
	run func(req runner.Request) runner.Result
}

func (f fakeRunner) Prepare(context.Context, *manifest.Tool, *policy.Grant) (runner.Prepared, error) {
	return f, nil
}

func (f fakeRunner) Run(_ context.Context, req runner.Request) (runner.Result, error) {
	return f.run(req), nil
}

// typicalArgs are the arguments of a typical call as JSON.
const typicalArgs = `{"text":"The quick brown fox jumps over the lazy dog.","top":3}`

// BenchmarkHostOverhead measures the host's own per-call work (lookup,
// grant, coercion, validation, canonical JSON, envelope) with a runner that
// returns its input at once.
func BenchmarkHostOverhead(b *testing.B) {
	h := hosttest.NewHost(b, nil, hosttest.Toolpacks(b))
	ctx := context.Background()
	real := h.Call(ctx, "text:stats", json.RawMessage(typicalArgs)) // a valid output to replay
	if real.Error != nil {
		b.Fatal(real.Error)
	}
	h = hosttest.NewHost(b, nil, hosttest.Toolpacks(b)) // nothing prepared yet
	defer host.SetRunner(h, "wasm:wasi-command", fakeRunner{run: func(req runner.Request) runner.Result {
		if bytes.HasPrefix(req.Input, []byte(`{"a"`)) { // core:echo
			return runner.Result{Output: req.Input}
		}
		return runner.Result{Output: real.Output}
	}})()
	b.Run("Call/json", func(b *testing.B) {
		args := json.RawMessage(typicalArgs)
		for b.Loop() {
			if env := h.Call(ctx, "text:stats", args); env.Error != nil {
				b.Fatal(env.Error)
			}
		}
	})
	b.Run("CallArgs/strings-coerced", func(b *testing.B) {
		for b.Loop() {
			args := map[string]any{"text": "The quick brown fox jumps over the lazy dog.", "top": "3"}
			if env := h.CallArgs(ctx, "text:stats", args); env.Error != nil {
				b.Fatal(env.Error)
			}
		}
	})
	b.Run("Exec/echo", func(b *testing.B) {
		out := `<ACTION><core:echo><a>1</a><b>two</b></core:echo></ACTION>`
		for b.Loop() {
			if turn := h.Exec(ctx, out); turn.Status != "success" {
				b.Fatal(turn.Observation)
			}
		}
	})
	b.Run("Exec/one-call", func(b *testing.B) {
		out := "Counting.\n<ACTION><text:stats><text>The quick brown fox jumps over the lazy dog.</text><top>3</top></text:stats></ACTION>"
		for b.Loop() {
			if turn := h.Exec(ctx, out); turn.Status != "success" {
				b.Fatal(turn.Observation)
			}
		}
	})
}

// buildEchoCommand builds plugins/echo as a plain wasi command (not the
// toolpack's reactor build) and returns the module.
func buildEchoCommand(b *testing.B) []byte {
	b.Helper()
	wasmPath := filepath.Join(b.TempDir(), "echo.wasm")
	build := exec.Command("go", "build", "-trimpath", "-o", wasmPath, "./plugins/echo")
	build.Dir = hosttest.Root(b)
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build echo command: %v\n%s", err, out)
	}
	wasmBytes, err := os.ReadFile(wasmPath)
	if err != nil {
		b.Fatal(err)
	}
	return wasmBytes
}

// BenchmarkEcho compares one echo call through the host with raw wazero
// (fresh instance of the same Go guest) and a python3 subprocess doing the
// same work, and an Exec of one call against the bare Call.
func BenchmarkEcho(b *testing.B) {
	ctx := context.Background()
	dir := hosttest.Toolpacks(b)
	h := hosttest.NewHost(b, nil, dir)
	args := json.RawMessage(`{"a":1,"b":"two"}`)
	if env := h.Call(ctx, "core:echo", args); env.Error != nil { // prepares the tool
		b.Fatal(env.Error)
	}
	b.Run("host/Call", func(b *testing.B) {
		for b.Loop() {
			if env := h.Call(ctx, "core:echo", args); env.Error != nil {
				b.Fatal(env.Error)
			}
		}
	})
	b.Run("host/Exec", func(b *testing.B) {
		out := `<ACTION><core:echo><a>1</a><b>two</b></core:echo></ACTION>`
		for b.Loop() {
			if turn := h.Exec(ctx, out); turn.Status != "success" {
				b.Fatal(turn.Observation)
			}
		}
	})
	b.Run("host/Call-command", func(b *testing.B) {
		// The same plugin built as a plain command, in a toolpack of its
		// own: its pooled instances are parked at their read of stdin.
		dir := commandPack(b)
		hc := hosttest.NewHost(b, nil, dir)
		if env := hc.Call(ctx, "cmd:echo", args); env.Error != nil {
			b.Fatal(env.Error)
		}
		time.Sleep(100 * time.Millisecond) // the pool parks its first instances
		for b.Loop() {
			if env := hc.Call(ctx, "cmd:echo", args); env.Error != nil {
				b.Fatal(env.Error)
			}
		}
	})
	b.Run("raw-wazero/fresh", func(b *testing.B) {
		// The toolpack's echo is a reactor build (the fast path); raw
		// wazero runs the same plugin built as a plain command.
		wasmBytes := buildEchoCommand(b)
		cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(hosttest.CacheDir(b), "wazero"))
		if err != nil {
			b.Fatal(err)
		}
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCompilationCache(cache))
		defer rt.Close(ctx)
		wasi_snapshot_preview1.MustInstantiate(ctx, rt)
		mod, err := rt.CompileModule(ctx, wasmBytes)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			var stdout bytes.Buffer
			cfg := wazero.NewModuleConfig().WithStdin(bytes.NewReader(args)).WithStdout(&stdout).WithName("")
			m, err := rt.InstantiateModule(ctx, mod, cfg)
			if err != nil {
				b.Fatal(err)
			}
			_ = m.Close(ctx)
			if stdout.Len() == 0 {
				b.Fatal("no output")
			}
		}
	})
	b.Run("python3-spawn", func(b *testing.B) {
		py := "/usr/bin/python3" // the system interpreter: a pyenv shim adds its own start-up
		if _, err := os.Stat(py); err != nil {
			if py, err = exec.LookPath("python3"); err != nil {
				b.Skip("python3 not installed")
			}
		}
		for b.Loop() {
			cmd := exec.Command(py, "-c", "import sys,json; json.dump(json.load(sys.stdin), sys.stdout)")
			cmd.Stdin = bytes.NewReader(args)
			if out, err := cmd.Output(); err != nil || len(out) == 0 {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLoad100 loads a folder of 100 tools into a new host:
// "new-files" is a folder this process has never read (each module is
// hashed, as at a process start), "again" the same folder once more (a
// reload, or another host of a multi-tenant server: the digests of
// unchanged files are remembered). The first call's compilation is
// served by the on-disk cache (see BenchmarkFirstCall).
func BenchmarkLoad100(b *testing.B) {
	ctx := context.Background()
	src := filepath.Join(hosttest.Toolpacks(b), "core")
	module, err := os.ReadFile(filepath.Join(src, "echo.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	folder := func(b *testing.B) string {
		dir := b.TempDir()
		for i := range 100 {
			tdir := filepath.Join(dir, fmt.Sprintf("t%03d", i))
			if err := os.MkdirAll(tdir, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tdir, "echo.wasm"), module, 0o644); err != nil {
				b.Fatal(err)
			}
			m := fmt.Sprintf(`{"toolId":"bench:tool-%03d","displayName":"Echo %d","description":"Echo copy %d.","version":"1.0.0",
			  "handler":{"type":"wasm","module":"echo.wasm","abi":"wasi-command"},
			  "parameters":{"type":"object","properties":{"text":{"type":"string"}}}}`, i, i, i)
			if err := os.WriteFile(filepath.Join(tdir, "echo.tool.json"), []byte(m), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		return dir
	}
	cacheDir := hosttest.CacheDir(b)
	load := func(b *testing.B, dir string) {
		h, err := host.New(ctx, host.Options{Dirs: []string{dir}, CacheDir: cacheDir})
		if err != nil {
			b.Fatal(err)
		}
		if n := len(h.Tools(host.Query{})); n != 100 {
			b.Fatalf("%d tools", n)
		}
		_ = h.Close(ctx)
	}
	b.Run("new-files", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			dir := folder(b)
			b.StartTimer()
			load(b, dir)
		}
	})
	b.Run("again", func(b *testing.B) {
		dir := folder(b)
		load(b, dir)
		for b.Loop() {
			load(b, dir)
		}
	})
}

// BenchmarkFirstCall is a process start: a new host whose first call
// compiles the Go echo guest, served from the on-disk compilation cache.
func BenchmarkFirstCall(b *testing.B) {
	ctx := context.Background()
	dir := hosttest.Toolpacks(b)
	cacheDir := hosttest.CacheDir(b)
	for _, tc := range []struct {
		name  string
		cache func(b *testing.B) string
	}{
		{"disk-cache", func(*testing.B) string { return cacheDir }},
		{"no-cache", func(b *testing.B) string { return b.TempDir() }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				h, err := host.New(ctx, host.Options{Dirs: []string{filepath.Join(dir, "core")}, CacheDir: tc.cache(b)})
				if err != nil {
					b.Fatal(err)
				}
				if env := h.Call(ctx, "core:echo", nil); env.Error != nil {
					b.Fatal(env.Error)
				}
				_ = h.Close(ctx)
			}
		})
	}
}

// BenchmarkEchoParallel measures throughput: run with -cpu 1,2 to compare
// one goroutine (GOMAXPROCS=1) with two.
func BenchmarkEchoParallel(b *testing.B) {
	ctx := context.Background()
	h := hosttest.NewHost(b, nil, hosttest.Toolpacks(b))
	for _, tool := range []string{"core:echo", "text:stats"} {
		b.Run(tool, func(b *testing.B) {
			args := json.RawMessage(`{"text":"one two three"}`)
			if env := h.Call(ctx, tool, args); env.Error != nil {
				b.Fatal(env.Error)
			}
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if env := h.Call(ctx, tool, args); env.Error != nil {
						b.Error(env.Error)
						return
					}
				}
			})
		})
	}
}

// BenchmarkNativeEcho is a Go tool's call through host.Call: the host's
// own work (lookup, coercion, validation, grant, envelope) plus a JSON
// round trip of the function's arguments and result. The reference in the
// same run is the function called directly with the same JSON round trip.
func BenchmarkNativeEcho(b *testing.B) {
	type msg struct {
		Text  string `json:"text"`
		Count int    `json:"count,omitempty"`
	}
	echo := func(_ context.Context, m msg) (msg, error) { return m, nil }
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{Tools: []host.Tool{host.Func(host.FuncSpec{ID: "bench:echo", Description: "Echo."}, echo)}, CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(ctx)
	args := json.RawMessage(`{"text":"hello","count":3}`)
	b.Run("host.Call", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if env := h.Call(ctx, "bench:echo", args); env.Status != abi.StatusSuccess {
				b.Fatal(env.Error)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m msg
			if err := json.Unmarshal(args, &m); err != nil {
				b.Fatal(err)
			}
			out, _ := echo(ctx, m)
			if _, err := json.Marshal(out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
