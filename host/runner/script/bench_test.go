package script_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

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
// Landlock, namespaces, prlimit, scrubbed env, capped output) with a bare
// spawn of the same interpreter on the same script and input. The
// isolation overhead is isolated/bare - 1.
func BenchmarkBridge(b *testing.B) {
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
		f := newFixtureB(b, tc.lang, tc.code)
		exe, err := script.InterpreterExe(r, tc.lang)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.lang+"/bare", func(b *testing.B) {
			args := []string{filepath.Join(f.tool.Dir, f.tool.Handler.ScriptPath)}
			if tc.lang == script.LangPython {
				args = append([]string{"-B"}, args...)
			}
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(exe, args...)
				cmd.Stdin = bytes.NewReader(input)
				cmd.Dir = b.TempDir()
				out, err := cmd.Output()
				if err != nil || len(out) == 0 {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.lang+"/isolated", func(b *testing.B) {
			p, err := r.Prepare(context.Background(), f.tool, f.grant)
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				res, err := p.Run(context.Background(), runner.Request{Input: input})
				if err != nil || res.Err != nil {
					b.Fatal(err, res.Err)
				}
			}
		})
	}
}
