package extism_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/extism"
)

func TestRun(t *testing.T) {
	r := newRunner(t)
	tests := []struct {
		name    string
		entry   string
		input   string
		grant   func(*policy.Grant)
		want    string   // output on success
		code    abi.Code // error code on failure
		message string   // substring of the error message
		logs    []string // substrings that must be in the logs
		nologs  []string // substrings that must not be
	}{
		{name: "echo", entry: "echo", input: `{"a":1}`, want: `{"a":1}`},
		{name: "empty input", entry: "echo", input: ``, want: ``},
		{name: "config from the grant", entry: "config", input: "greeting", grant: func(g *policy.Grant) { g.Config = map[string]string{"greeting": "hi"} }, want: "hi"},
		{name: "config unset", entry: "config", input: "missing", want: "<unset>"},
		{name: "vars start empty", entry: "vars", want: "1"},
		{name: "logs", entry: "logs", want: `"ok"`,
			logs:   []string{"[debug] a debug line", "[info] an info line", "[warn] a warn line", "[error] an error line", "to stderr"},
			nologs: []string{"trace"}},
		{name: "error_set", entry: "fail", code: abi.CodeToolError, message: "the probe failed on purpose"},
		{name: "non-zero return", entry: "rc", code: abi.CodeToolError, message: "plugin returned code 3"},
		{name: "panic", entry: "crash", code: abi.CodeToolError, message: "plugin trapped", logs: []string{"panic: probe panic"}},
		{name: "timeout", entry: "spin", grant: func(g *policy.Grant) { g.Limits.Timeout = 200 * time.Millisecond }, code: abi.CodeTimeout, message: "200ms"},
		{name: "linear memory cap", entry: "grow", grant: func(g *policy.Grant) { g.Limits.MemoryBytes = 64 << 20 }, code: abi.CodeMemoryLimit},
		{name: "kernel memory cap", entry: "kernelgrow", grant: func(g *policy.Grant) { g.Limits.MemoryBytes = 64 << 20 }, code: abi.CodeMemoryLimit},
		{name: "initial memory over the cap", entry: "echo", grant: func(g *policy.Grant) { g.Limits.MemoryBytes = 1 << 20 }, code: abi.CodeMemoryLimit},
		{name: "output cap", entry: "big", code: abi.CodeOutputLimit, message: "2097152 bytes"},
		{name: "fuel", entry: "spin", grant: func(g *policy.Grant) { g.Limits.Fuel = 50_000_000 }, code: abi.CodeFuelExhausted, message: "50000000"},
		{name: "deterministic", entry: "echo", input: `"d"`, grant: func(g *policy.Grant) { g.Limits.Deterministic = true }, want: `"d"`},
		{name: "denied grant", entry: "echo", grant: func(g *policy.Grant) { g.Denied = true }, code: abi.CodePermissionDenied},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool := toolFor(guests["probe"], tc.entry)
			g := grantFor(tool)
			if tc.grant != nil {
				tc.grant(g)
			}
			p := prepare(t, r, tool, g)
			res := run(t, p, tc.input)
			if tc.code == "" {
				if res.Err != nil || string(res.Output) != tc.want {
					t.Fatalf("got %q, %v; want %q (logs %q)", res.Output, res.Err, tc.want, res.Logs)
				}
			} else if res.Err == nil || res.Err.Code != tc.code || !strings.Contains(res.Err.Message, tc.message) {
				t.Fatalf("err = %v, want %s containing %q (logs %q)", res.Err, tc.code, tc.message, res.Logs)
			}
			all := strings.Join(res.Logs, "\n")
			for _, s := range tc.logs {
				if !strings.Contains(all, s) {
					t.Errorf("logs %q lack %q", res.Logs, s)
				}
			}
			for _, s := range tc.nologs {
				if strings.Contains(all, s) {
					t.Errorf("logs %q contain %q", res.Logs, s)
				}
			}
			// The next call works.
			next := run(t, prepare(t, r, toolFor(guests["probe"], "echo"), grantFor(tool)), `"next"`)
			if next.Err != nil || string(next.Output) != `"next"` {
				t.Fatalf("next call: %q %v", next.Output, next.Err)
			}
		})
	}
}

func TestRun_logBudget(t *testing.T) {
	r := newRunner(t)
	tool := toolFor(guests["probe"], "chatty")
	res := run(t, prepare(t, r, tool, grantFor(tool)), "")
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	total := 0
	for _, l := range res.Logs {
		total += len(l)
	}
	if total > 64<<10+64 || !strings.Contains(res.Logs[len(res.Logs)-1], "truncated") {
		t.Fatalf("%d lines, %d bytes; last %q", len(res.Logs), total, res.Logs[len(res.Logs)-1])
	}
}

func TestRun_concurrent(t *testing.T) {
	r := newRunner(t)
	tool := toolFor(guests["probe"], "vars")
	p := prepare(t, r, tool, grantFor(tool))
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 3; j++ {
				res, err := p.Run(context.Background(), runner.Request{})
				if err != nil || res.Err != nil || string(res.Output) != "1" {
					errs <- string(res.Output)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("a call saw another call's vars: %q", e)
	}
}

func TestPrepare_errors(t *testing.T) {
	r := newRunner(t)
	probe := guests["probe"]
	code, err := os.ReadFile(probe)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(code)
	hostWasm, err := filepath.Abs("../../../testdata/extism/host.wasm")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		tool  func() *manifest.Tool
		grant func(*policy.Grant)
		want  string
	}{
		{"missing entry point", func() *manifest.Tool { return toolFor(probe, "nope") }, nil, `exports no function "nope"`},
		{"default entry point missing", func() *manifest.Tool { return toolFor(probe, "") }, nil, `"call"`},
		{"wrong abi", func() *manifest.Tool {
			t := toolFor(probe, "echo")
			t.Handler.ABI = manifest.ABIWasiCommand
			return t
		}, nil, "not wasm/extism"},
		{"digest mismatch", func() *manifest.Tool {
			t := toolFor(probe, "echo")
			t.Handler.SHA256 = strings.Repeat("0", 64)
			return t
		}, nil, "sha256"},
		{"module escapes", func() *manifest.Tool {
			t := toolFor(probe, "echo")
			t.Handler.Module = "../elsewhere/probe.wasm"
			return t
		}, nil, "escapes"},
		{"custom host function", func() *manifest.Tool { return toolFor(hostWasm, "run_test") }, nil, "extism:host/user.mult"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool := tc.tool()
			g := grantFor(tool)
			if tc.grant != nil {
				tc.grant(g)
			}
			_, err := r.Prepare(context.Background(), tool, g)
			if err == nil {
				t.Fatal("Prepare succeeded")
			}
			if !errors.Is(err, abi.ErrLoadError) {
				t.Fatalf("err = %v, want LOAD_ERROR", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	t.Run("matching digest", func(t *testing.T) {
		tool := toolFor(probe, "echo")
		tool.Handler.SHA256 = hex.EncodeToString(sum[:])
		prepare(t, r, tool, grantFor(tool))
	})
}

func TestRun_fuelUsage(t *testing.T) {
	r := newRunner(t)
	tool := toolFor(guests["probe"], "echo")
	g := grantFor(tool)
	g.Limits.Fuel = 1_000_000_000
	g.Limits.Deterministic = true
	p := prepare(t, r, tool, g)
	var first uint64
	for i := 0; i < 2; i++ {
		res := run(t, p, `{"k":"v"}`)
		if res.Err != nil || res.Usage.Fuel == nil || *res.Usage.Fuel == 0 {
			t.Fatalf("run %d: %v, fuel %v", i, res.Err, res.Usage.Fuel)
		}
		if i == 0 {
			first = *res.Usage.Fuel
		} else if *res.Usage.Fuel != first {
			t.Fatalf("fuel %d then %d: a deterministic call must cost the same", first, *res.Usage.Fuel)
		}
	}
	unmetered := run(t, prepare(t, r, tool, grantFor(tool)), `{}`)
	if unmetered.Usage.Fuel != nil {
		t.Fatalf("fuel reported without a fuel limit: %d", *unmetered.Usage.Fuel)
	}
}

func TestRun_snapshot(t *testing.T) {
	r := newRunner(t)
	tests := []struct {
		name  string
		grant func(*policy.Grant)
		snap  bool
	}{
		{"default grant restores a snapshot", nil, true},
		{"fuel runs the initialiser", func(g *policy.Grant) { g.Limits.Fuel = 1 << 40 }, false},
		{"deterministic runs the initialiser", func(g *policy.Grant) { g.Limits.Deterministic = true }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool := toolFor(guests["probe"], "counter")
			g := grantFor(tool)
			if tc.grant != nil {
				tc.grant(g)
			}
			p := prepare(t, r, tool, g)
			if extism.HasSnapshot(p) != tc.snap {
				t.Fatalf("snapshot = %v, want %v", extism.HasSnapshot(p), tc.snap)
			}
			for i := 0; i < 3; i++ {
				if res := run(t, p, ""); res.Err != nil || string(res.Output) != "1" {
					t.Fatalf("call %d: %q %v: Go memory leaked between calls", i, res.Output, res.Err)
				}
			}
		})
	}
	t.Run("third-party Rust plugin without initialiser", func(t *testing.T) {
		path, _ := filepath.Abs(filepath.Join(thirdParty, "count_vowels.wasm"))
		tool := toolFor(path, "count_vowels")
		if extism.HasSnapshot(prepare(t, r, tool, grantFor(tool))) {
			t.Fatal("a module without initialiser has nothing to snapshot")
		}
	})
}

// TestFileAccess pins the Extism file system: plugins get the same WASI
// preopens under the grant as wasi-command tools (a manifest asking for
// fileAccess was refused, so third-party plugins that read files could not
// run). A granted file reads; an ungranted or hidden one is
// PERMISSION_DENIED.
func TestFileAccess(t *testing.T) {
	ws := t.TempDir()
	for name, body := range map[string]string{"data/ok.txt": "granted", "secret.txt": "nope", ".env": "KEY=1"} {
		p := filepath.Join(ws, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := newRunner(t)
	tool := toolFor(guests["probe"], "readfile")
	tool.SecurityContext = &manifest.SecurityContext{FileAccess: &manifest.FileAccess{AllowRead: []string{"data/**"}}}
	g := grantFor(tool)
	g.Workspace = ws
	g.Read = []policy.PathRule{{Root: policy.RootWorkspace, Pattern: "data/**"}, {Root: policy.RootTool, Pattern: "**"}, {Root: policy.RootTmp, Pattern: "**"}}
	g.Write = []policy.PathRule{{Root: policy.RootTmp, Pattern: "**"}}
	p := prepare(t, r, tool, g)
	tests := []struct {
		path string
		want string
		code abi.Code
	}{
		{"/workspace/data/ok.txt", "granted", ""},
		{"/workspace/secret.txt", "", abi.CodePermissionDenied},
		{"/workspace/.env", "", abi.CodePermissionDenied},
		{"/etc/passwd", "", abi.CodePermissionDenied},
		{"/workspace/data/ok.txt", "granted", ""}, // the next call still works
	}
	for _, tc := range tests {
		res := run(t, p, tc.path)
		if tc.code == "" {
			if res.Err != nil || string(res.Output) != tc.want {
				t.Fatalf("%s: %v %q", tc.path, res.Err, res.Output)
			}
			continue
		}
		if res.Err == nil || res.Err.Code != tc.code {
			t.Fatalf("%s: got %v %q, want %s", tc.path, res.Err, res.Output, tc.code)
		}
	}
}
