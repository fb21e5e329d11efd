package wasm_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/internal/limitio"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/wasm"
)

const benignWAT = `{"benign":true}`

func code(res runner.Result) abi.Code {
	if res.Err == nil {
		return ""
	}
	return res.Err.Code
}

func TestRun_echo(t *testing.T) {
	r := newRunner(t)
	p := prepare(t, r, watGuest(t, "echo"), newEnv(t), nil)
	in := `{"a":1,"b":"x"}`
	res := run(t, p, in)
	if res.Err != nil || string(res.Output) != in {
		t.Fatalf("got %q, %v", res.Output, res.Err)
	}
	if res.Usage.MemoryBytes != 65536 {
		t.Fatalf("memory %d, want 1 page", res.Usage.MemoryBytes)
	}
	if len(res.Logs) != 0 {
		t.Fatalf("logs %q", res.Logs)
	}
}

func TestRun_goEcho(t *testing.T) {
	r := newRunner(t)
	p := prepare(t, r, goGuest(t, "goecho"), newEnv(t), nil)
	in := `{"hello":"wörld"}`
	if res := run(t, p, in); res.Err != nil || string(res.Output) != in {
		t.Fatalf("got %q, %v", res.Output, res.Err)
	}
}

// TestAdversarial runs each hostile guest, checks its code, then checks
// that the next call on the same prepared tool succeeds.
func TestAdversarial(t *testing.T) {
	type tc struct {
		name    string
		guest   func(testing.TB) string
		input   string
		benign  string
		edit    func(*policy.Grant)
		want    abi.Code
		message string // substring of the error message
		check   func(t *testing.T, res runner.Result)
	}
	wat := func(name string) func(testing.TB) string {
		return func(t testing.TB) string { return watGuest(t, name) }
	}
	probe := func(t testing.TB) string { return goGuest(t, "goprobe") }
	short := func(g *policy.Grant) { g.Limits.Timeout = time.Second }
	ops := func(strict bool, o ...string) string {
		return `{"strict":` + map[bool]string{true: "true", false: "false"}[strict] + `,"ops":[` + strings.Join(o, ",") + `]}`
	}
	tests := []tc{
		{name: "infinite loop", guest: wat("loop"), edit: short, want: abi.CodeTimeout},
		{name: "sleep past timeout", guest: wat("sleep"), edit: short, want: abi.CodeTimeout},
		{name: "deep recursion", guest: wat("recurse"), want: abi.CodeToolError, message: "stack overflow"},
		{name: "memory bomb", guest: wat("membomb"), edit: func(g *policy.Grant) { g.Limits.MemoryBytes = 8 << 20 }, want: abi.CodeMemoryLimit,
			check: func(t *testing.T, res runner.Result) {
				if res.Usage.MemoryBytes > 8<<20 || res.Usage.MemoryBytes < 4<<20 {
					t.Errorf("memory usage %d outside (4 MiB, 8 MiB]", res.Usage.MemoryBytes)
				}
			}},
		{name: "50 MB to stdout", guest: wat("flood"), want: abi.CodeOutputLimit,
			check: func(t *testing.T, res runner.Result) {
				if len(res.Output) != 1<<20 {
					t.Errorf("kept %d bytes, want the 1 MiB cap", len(res.Output))
				}
			}},
		{name: "non-JSON stdout is the host's to judge", guest: wat("nonjson"), want: "",
			check: func(t *testing.T, res runner.Result) {
				if string(res.Output) != "this is not json" {
					t.Errorf("output %q", res.Output)
				}
			}},
		{name: "trap", guest: wat("trap"), want: abi.CodeToolError, message: "unreachable"},
		{name: "non-zero exit with error body", guest: wat("exit3"), want: abi.CodeToolError, message: "no such city"},
		{name: "fd_renumber to 2^31-1 is refused, not allocated", guest: wat("fdbomb"), want: "",
			check: func(t *testing.T, res runner.Result) {
				// The host grew its descriptor table to the guest's index
				// (16 GiB) and died; now the guest gets EBADF (8).
				if string(res.Output) != `{"errno":"08"}` {
					t.Errorf("output %q, want EBADF", res.Output)
				}
			}},
		{name: "log flood is truncated", guest: wat("stderr"), want: "",
			check: func(t *testing.T, res runner.Result) {
				total := 0
				for _, l := range res.Logs {
					total += len(l)
				}
				last := res.Logs[len(res.Logs)-1]
				if total > limitio.DefaultLogBytes+len(limitio.TruncatedMarker) || !strings.HasSuffix(last, limitio.TruncatedMarker) {
					t.Errorf("logs %d bytes, last %q", total, last)
				}
			}},
		{name: "read /etc/passwd", guest: probe, input: ops(true, `{"op":"read","path":"/etc/passwd"}`), want: abi.CodePermissionDenied, message: "denied: open /etc/passwd (read)"},
		{name: "dotdot escape", guest: probe, input: ops(true, `{"op":"read","path":"/workspace/../../outside.txt"}`), want: abi.CodePermissionDenied, message: "denied: open /outside.txt"},
		{name: "relative path escape", guest: probe, input: ops(true, `{"op":"read","path":"../outside.txt"}`), want: abi.CodePermissionDenied},
		{name: "symlink escape", guest: probe, input: ops(true, `{"op":"read","path":"/workspace/escape"}`), want: abi.CodePermissionDenied, message: "leaves /workspace"},
		{name: "write to read-only tool mount", guest: probe, input: ops(true, `{"op":"write","path":"/tool/tool.wasm","data":"x"}`), want: abi.CodePermissionDenied, message: "denied: open /tool/tool.wasm (write)"},
		{name: "guest hides the refusal but fails", guest: probe, input: ops(false, `{"op":"read","path":"/workspace/secret.txt"}`, `{"op":"exit","code":1}`), want: abi.CodePermissionDenied},
		{name: "panic", guest: probe, input: ops(true, `{"op":"panic"}`), want: abi.CodeToolError, message: "panic: probe panic"},
		{name: "non-zero exit", guest: probe, input: ops(true, `{"op":"exit","code":4}`), want: abi.CodeToolError, message: "exit status 4"},
		{name: "go memory bomb", guest: probe, input: ops(true, `{"op":"alloc","mb":4}`), edit: func(g *policy.Grant) { g.Limits.MemoryBytes = 48 << 20 }, want: abi.CodeMemoryLimit},
		{name: "fill /tmp past the memory limit", guest: probe, input: ops(true, `{"op":"fill","path":"/tmp/big","mb":96}`), edit: func(g *policy.Grant) { g.Limits.MemoryBytes = 64 << 20 },
			want: abi.CodePermissionDenied, message: "denied: write /tmp: full"},
		{name: "go sleep past timeout", guest: probe, input: ops(true, `{"op":"sleep","ms":60000}`), edit: func(g *policy.Grant) { g.Limits.Timeout = 3 * time.Second }, want: abi.CodeTimeout},
	}
	// Each case runs on a fresh instance (plain) and, with a pool
	// budget, on a parked one where the guest can be parked (the Go
	// guest; the WAT guests do not read stdin again after EINTR).
	for _, mode := range []struct {
		name   string
		budget uint64
	}{{"plain", 0}, {"parked", 64 << 20}} {
		t.Run(mode.name, func(t *testing.T) {
			e := newEnv(t)
			r := newPoolRunner(t, mode.budget)
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					module := tc.guest(t)
					p := prepare(t, r, module, e, tc.edit)
					if mode.budget > 0 {
						parked := wasm.Parks(p) && wasm.WaitParked(p)
						if goModule := strings.HasPrefix(filepath.Base(module), "goprobe"); parked != goModule {
							t.Fatalf("parked %v for %s", parked, filepath.Base(module))
						}
					}
					input, benign := tc.input, tc.benign
					if input == "" {
						input, benign = "{}", benignWAT
					}
					if benign == "" {
						benign = `{"ops":[]}`
					}
					res := run(t, p, input)
					if code(res) != tc.want {
						t.Fatalf("code %q (%v), want %q; logs %q", code(res), res.Err, tc.want, res.Logs)
					}
					if tc.message != "" && !strings.Contains(res.Err.Message, tc.message) {
						t.Errorf("message %q does not contain %q", res.Err.Message, tc.message)
					}
					if tc.check != nil {
						tc.check(t, res)
					}
					next := run(t, p, benign)
					if next.Err != nil {
						t.Fatalf("next call failed: %v (logs %q)", next.Err, next.Logs)
					}
				})
			}
		})
	}
}

func TestEnv(t *testing.T) {
	t.Setenv("AGENTHOST_TEST_SECRET", "hunter2")
	t.Setenv("LANG", "C.UTF-8")
	r := newRunner(t)
	p := prepare(t, r, goGuest(t, "goprobe"), newEnv(t), func(g *policy.Grant) {
		g.Env = map[string]string{"LANG": "C.UTF-8"}
		g.EnvNames = []string{"LANG"}
	})
	tests := []struct {
		name, input, want string
	}{
		{"granted variable present", `{"ops":[{"op":"env","path":"LANG"}]}`, "C.UTF-8"},
		{"whole environment is only the grant", `{"ops":[{"op":"env"}]}`, "LANG=C.UTF-8"},
		{"host secret absent", `{"ops":[{"op":"env","path":"AGENTHOST_TEST_SECRET"}]}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, p, tc.input)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			var out struct{ Results []struct{ Data string } }
			if err := json.Unmarshal(res.Output, &out); err != nil {
				t.Fatal(err)
			}
			if out.Results[0].Data != tc.want {
				t.Errorf("got %q, want %q", out.Results[0].Data, tc.want)
			}
			if strings.Contains(string(res.Output)+strings.Join(res.Logs, "\n"), "hunter2") {
				t.Error("host secret leaked")
			}
		})
	}
}

func TestArgs(t *testing.T) {
	r := newRunner(t)
	p := prepare(t, r, goGuest(t, "goprobe"), newEnv(t), func(g *policy.Grant) {
		g.Config = map[string]string{"b": "2", "a": "x y"}
	})
	res := run(t, p, `{"ops":[{"op":"args"}]}`)
	if res.Err != nil || !strings.Contains(string(res.Output), `"data":"test:guest --a=x y --b=2"`) {
		t.Fatalf("got %s, %v", res.Output, res.Err)
	}
}

// probeResult runs ops and returns the code and the first op's data.
func probeResult(t *testing.T, p runner.Prepared, ops string) (abi.Code, string, runner.Result) {
	t.Helper()
	res := run(t, p, `{"strict":true,"ops":[`+ops+`]}`)
	if res.Err != nil {
		return res.Err.Code, "", res
	}
	var out struct{ Results []struct{ Data string } }
	if err := json.Unmarshal(res.Output, &out); err != nil {
		t.Fatalf("output %q: %v", res.Output, err)
	}
	data := ""
	if len(out.Results) > 0 {
		data = out.Results[len(out.Results)-1].Data
	}
	return "", data, res
}

// TestFiles pairs an allowed and a denied case for every file capability.
func TestFiles(t *testing.T) {
	r := newRunner(t)
	e := newEnv(t)
	p := prepare(t, r, goGuest(t, "goprobe"), e, func(g *policy.Grant) {
		g.Mounts = []policy.Mount{{GuestPath: "/mnt", Folder: "data"}}
	})
	deny := abi.CodePermissionDenied
	tests := []struct {
		name string
		ops  string
		want abi.Code
		data string
	}{
		{"read granted", `{"op":"read","path":"/workspace/public.txt"}`, "", "public"},
		{"read not granted", `{"op":"read","path":"/workspace/secret.txt"}`, deny, ""},
		{"read glob granted", `{"op":"read","path":"/workspace/data/a.txt"}`, "", "a"},
		{"read relative to cwd outside mounts", `{"op":"read","path":"public.txt"}`, deny, ""},
		{"read through symlink inside", `{"op":"read","path":"/workspace/alias"}`, "", "public"},
		{"read through symlink leaving", `{"op":"read","path":"/workspace/escape"}`, deny, ""},
		{"list workspace shows only visible", `{"op":"list","path":"/workspace"}`, "", "alias,data,out,public.txt"},
		{"list outside mounts", `{"op":"list","path":"/etc"}`, deny, ""},
		{"stat granted", `{"op":"stat","path":"/workspace/public.txt"}`, "", "6"},
		{"stat not granted", `{"op":"stat","path":"/workspace/secret.txt"}`, deny, ""},
		{"write granted", `{"op":"write","path":"/workspace/out/new.txt","data":"n"},{"op":"read","path":"/workspace/out/new.txt"}`, "", "n"},
		{"write not granted", `{"op":"write","path":"/workspace/public.txt","data":"x"}`, deny, ""},
		{"append granted", `{"op":"append","path":"/workspace/out/keep.txt","data":"+"},{"op":"read","path":"/workspace/out/keep.txt"}`, "", "keep+"},
		{"mkdir granted", `{"op":"mkdir","path":"/workspace/out/dir"}`, "", ""},
		{"mkdir not granted", `{"op":"mkdir","path":"/workspace/dir"}`, deny, ""},
		{"rename granted", `{"op":"write","path":"/workspace/out/r1","data":"r"},{"op":"rename","path":"/workspace/out/r1","to":"/workspace/out/r2"},{"op":"read","path":"/workspace/out/r2"}`, "", "r"},
		{"rename out of granted", `{"op":"rename","path":"/workspace/public.txt","to":"/workspace/out/p"}`, deny, ""},
		{"remove granted", `{"op":"write","path":"/workspace/out/gone","data":"g"},{"op":"remove","path":"/workspace/out/gone"}`, "", ""},
		{"remove not granted", `{"op":"remove","path":"/workspace/public.txt"}`, deny, ""},
		{"symlink creation", `{"op":"symlink","path":"/workspace/out/l","to":"../secret.txt"}`, deny, ""},
		{"tool folder readable", `{"op":"read","path":"/tool/README.md"}`, "", "tool readme"},
		{"tool folder not writable", `{"op":"write","path":"/tool/new","data":"x"}`, deny, ""},
		{"tmp read-write", `{"op":"write","path":"/tmp/t","data":"t"},{"op":"read","path":"/tmp/t"}`, "", "t"},
		{"tmp is fresh per call", `{"op":"read","path":"/tmp/t"}`, abi.CodeToolError, ""},
		{"cache read-write", `{"op":"write","path":"/cache/c","data":"c"},{"op":"read","path":"/cache/c"}`, "", "c"},
		{"cache persists", `{"op":"read","path":"/cache/c"}`, "", "c"},
		{"extra mount reads folder", `{"op":"read","path":"/mnt/a.txt"}`, "", "a"},
		{"extra mount cannot climb", `{"op":"read","path":"/mnt/../workspace/secret.txt"}`, deny, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, data, res := probeResult(t, p, tc.ops)
			if got != tc.want {
				t.Fatalf("code %q (%v), want %q; logs %q", got, res.Err, tc.want, res.Logs)
			}
			if tc.want == "" && data != tc.data {
				t.Fatalf("data %q, want %q", data, tc.data)
			}
			if tc.want == deny && !strings.Contains(strings.Join(res.Logs, "\n"), "denied: ") {
				t.Fatalf("no refusal in logs %q", res.Logs)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "out", "r2")); err != nil {
		t.Errorf("host does not see the guest's rename: %v", err)
	}
}

func TestFiles_refusalHandledBySuccessfulGuest(t *testing.T) {
	r := newRunner(t)
	p := prepare(t, r, goGuest(t, "goprobe"), newEnv(t), nil)
	res := run(t, p, `{"ops":[{"op":"read","path":"/workspace/secret.txt"}]}`)
	if res.Err != nil {
		t.Fatalf("guest that carried on failed: %v", res.Err)
	}
	if !strings.Contains(strings.Join(res.Logs, "\n"), "denied: open /workspace/secret.txt (read)") {
		t.Fatalf("refusal not in logs %q", res.Logs)
	}
	// The next call reuses the pooled mounts: no refusal carries over.
	next := run(t, p, `{"strict":true,"ops":[{"op":"exit","code":1}]}`)
	if code(next) != abi.CodeToolError || len(next.Logs) != 0 {
		t.Fatalf("next call: %v, logs %q", next.Err, next.Logs)
	}
}

func TestLimits(t *testing.T) {
	r := newRunner(t)
	e := newEnv(t)
	echo := watGuest(t, "echo")
	in := `{"k":"` + strings.Repeat("v", 100) + `"}`
	tests := []struct {
		name string
		edit func(*policy.Grant)
		want abi.Code
	}{
		{"output at the cap", func(g *policy.Grant) { g.Limits.MaxOutputBytes = int64(len(in)) }, ""},
		{"output over the cap", func(g *policy.Grant) { g.Limits.MaxOutputBytes = int64(len(in) - 1) }, abi.CodeOutputLimit},
		{"memory at the module's need", func(g *policy.Grant) { g.Limits.MemoryBytes = 65536 }, ""},
		{"initial memory over the cap", func(g *policy.Grant) { g.Limits.MemoryBytes = 65535 }, abi.CodeMemoryLimit},
		{"short timeout, fast guest", func(g *policy.Grant) { g.Limits.Timeout = 2 * time.Second }, ""},
		{"zero limits mean the defaults", func(g *policy.Grant) { g.Limits = policy.Limits{} }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := prepare(t, r, echo, e, tc.edit)
			if res := run(t, p, in); code(res) != tc.want {
				t.Fatalf("code %q (%v), want %q", code(res), res.Err, tc.want)
			}
		})
	}
}

func TestLimits_deterministic(t *testing.T) {
	r := newRunner(t)
	e := newEnv(t)
	now := `{"strict":true,"ops":[{"op":"now"}]}`
	fixed := prepare(t, r, goGuest(t, "goprobe"), e, func(g *policy.Grant) { g.Limits.Deterministic = true })
	a, b := run(t, fixed, now), run(t, fixed, now)
	if a.Err != nil || string(a.Output) != string(b.Output) {
		t.Fatalf("deterministic clock differs: %s vs %s (%v)", a.Output, b.Output, a.Err)
	}
	real := prepare(t, r, goGuest(t, "goprobe"), e, nil)
	if c := run(t, real, now); c.Err != nil || string(c.Output) == string(a.Output) {
		t.Fatalf("real clock gives the fixed time %s (%v)", c.Output, c.Err)
	}
}

func TestFuel(t *testing.T) {
	r := newRunner(t)
	e := newEnv(t)
	metered := func(fuel uint64) func(*policy.Grant) {
		return func(g *policy.Grant) { g.Limits.Fuel = fuel; g.Limits.Deterministic = true }
	}
	t.Run("loop exhausts its fuel", func(t *testing.T) {
		p := prepare(t, r, watGuest(t, "loop"), e, metered(1_000_000))
		res := run(t, p, "{}")
		if code(res) != abi.CodeFuelExhausted || res.Usage.Fuel == nil || *res.Usage.Fuel != 1_000_000 {
			t.Fatalf("code %q fuel %v", code(res), res.Usage.Fuel)
		}
		if next := run(t, p, benignWAT); next.Err != nil {
			t.Fatalf("next call: %v", next.Err)
		}
	})
	t.Run("same call costs the same", func(t *testing.T) {
		p := prepare(t, r, goGuest(t, "goprobe"), e, metered(1_000_000_000))
		in := `{"strict":true,"ops":[{"op":"read","path":"/workspace/public.txt"},{"op":"now"}]}`
		a, b := run(t, p, in), run(t, p, in)
		if a.Err != nil || b.Err != nil || a.Usage.Fuel == nil || b.Usage.Fuel == nil {
			t.Fatalf("%v %v", a.Err, b.Err)
		}
		if *a.Usage.Fuel == 0 || *a.Usage.Fuel != *b.Usage.Fuel {
			t.Fatalf("fuel %d then %d", *a.Usage.Fuel, *b.Usage.Fuel)
		}
	})
	t.Run("unmetered reports no fuel", func(t *testing.T) {
		p := prepare(t, r, watGuest(t, "echo"), e, nil)
		if res := run(t, p, "{}"); res.Usage.Fuel != nil {
			t.Fatalf("fuel %d reported for an unmetered tool", *res.Usage.Fuel)
		}
	})
}

func TestRun_callerCancel(t *testing.T) {
	r := newRunner(t)
	p := prepare(t, r, watGuest(t, "loop"), newEnv(t), nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := p.Run(ctx, runner.Request{Input: []byte("{}")}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestConcurrent(t *testing.T) {
	r := newRunner(t)
	e := newEnv(t)
	echo := prepare(t, r, watGuest(t, "echo"), e, nil)
	loop := prepare(t, r, watGuest(t, "loop"), e, func(g *policy.Grant) { g.Limits.Timeout = 50 * time.Millisecond })
	probe := prepare(t, r, goGuest(t, "goprobe"), e, nil)
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 6 {
				in := `{"i":` + string(rune('0'+i)) + `,"j":` + string(rune('0'+j)) + `}`
				switch j % 3 {
				case 0:
					if res := run(t, echo, in); res.Err != nil || string(res.Output) != in {
						errs <- "echo: " + string(res.Output)
					}
				case 1:
					if res := run(t, loop, "{}"); code(res) != abi.CodeTimeout {
						errs <- "loop: " + string(code(res))
					}
				case 2:
					data := "i" + string(rune('0'+i)) + "j" + string(rune('0'+j))
					res := run(t, probe, `{"strict":true,"ops":[{"op":"write","path":"/tmp/x","data":"`+data+`"},{"op":"read","path":"/tmp/x"}]}`)
					if res.Err != nil || !strings.Contains(string(res.Output), `"data":"`+data+`"`) {
						errs <- "probe: " + string(res.Output) + " " + string(code(res))
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestPrepare_errors(t *testing.T) {
	r := newRunner(t)
	e := newEnv(t)
	echo := watGuest(t, "echo")
	tests := []struct {
		name  string
		edit  func(tool *wasmTool)
		want  abi.Code
		about string
	}{
		{"extism abi", func(w *wasmTool) { w.tool.Handler.ABI = "extism" }, abi.CodeLoadError, "abi"},
		{"not wasm", func(w *wasmTool) { w.tool.Handler.Type = "external-script" }, abi.CodeLoadError, "handler type"},
		{"entry point", func(w *wasmTool) { w.tool.Handler.EntryPoint = "run" }, abi.CodeLoadError, "entryPoint"},
		{"module escapes", func(w *wasmTool) { w.tool.Handler.Module = "../x.wasm" }, abi.CodeLoadError, "leaves"},
		{"module absolute", func(w *wasmTool) { w.tool.Handler.Module = "/etc/passwd" }, abi.CodeLoadError, "leaves"},
		{"module symlink escapes", func(w *wasmTool) {
			_ = os.Symlink(e.outside, filepath.Join(w.tool.Dir, "link.wasm"))
			w.tool.Handler.Module = "link.wasm"
		}, abi.CodeLoadError, "read module"},
		{"digest mismatch", func(w *wasmTool) { w.tool.Handler.SHA256 = strings.Repeat("0", 64) }, abi.CodeLoadError, "sha256"},
		{"not a module", func(w *wasmTool) { _ = os.WriteFile(filepath.Join(w.tool.Dir, "tool.wasm"), []byte("nope"), 0o644) }, abi.CodeLoadError, "not a WebAssembly"},
		{"denied tool", func(w *wasmTool) { w.grant.Denied = true }, abi.CodePermissionDenied, "denies"},
		{"mount over /tool", func(w *wasmTool) { w.grant.Mounts = []policy.Mount{{GuestPath: "/tool", Folder: "data"}} }, abi.CodeLoadError, "guest path"},
		{"mount leaving workspace", func(w *wasmTool) { w.grant.Mounts = []policy.Mount{{GuestPath: "/mnt", Folder: "../x"}} }, abi.CodeLoadError, "leaves"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool := toolFor(t, echo)
			w := &wasmTool{tool: tool, grant: e.grant(tool.Dir)}
			tc.edit(w)
			_, err := r.Prepare(context.Background(), w.tool, w.grant)
			var ae *abi.Error
			if !errors.As(err, &ae) || ae.Code != tc.want || !strings.Contains(err.Error(), tc.about) {
				t.Fatalf("err = %v, want %s about %q", err, tc.want, tc.about)
			}
		})
	}
	t.Run("no _start", func(t *testing.T) {
		dir := t.TempDir()
		// (module) with a memory and no exports.
		mod := []byte{0, 'a', 's', 'm', 1, 0, 0, 0, 5, 3, 1, 0, 1}
		p := filepath.Join(dir, "lib.wasm")
		if err := os.WriteFile(p, mod, 0o644); err != nil {
			t.Fatal(err)
		}
		tool := toolFor(t, p)
		_, err := r.Prepare(context.Background(), tool, e.grant(tool.Dir))
		if !errors.Is(err, abi.ErrLoadError) || !strings.Contains(err.Error(), "_start") {
			t.Fatalf("err = %v", err)
		}
	})
}

type wasmTool struct {
	tool  *manifest.Tool
	grant *policy.Grant
}

func TestPrepare_sharesCompiledModules(t *testing.T) {
	r := newRunner(t)
	e := newEnv(t)
	a := prepare(t, r, watGuest(t, "echo"), e, nil)
	b := prepare(t, r, watGuest(t, "echo"), e, nil)
	prepare(t, r, watGuest(t, "trap"), e, nil)
	if n := wasm.CompiledCount(r); n != 2 {
		t.Fatalf("compiled %d modules, want 2", n)
	}
	for _, p := range []runner.Prepared{a, b} {
		if res := run(t, p, `{"x":1}`); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
}

func TestNew_cacheDir(t *testing.T) {
	dir := t.TempDir()
	r, err := wasm.New(context.Background(), wasm.Options{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	prepare(t, r, watGuest(t, "echo"), newEnv(t), nil)
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var files int
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, _ error) error {
		if d != nil && !d.IsDir() {
			files++
		}
		return nil
	})
	if files == 0 {
		t.Fatal("no compiled code in the cache folder")
	}
}

func TestClose_thenRunFails(t *testing.T) {
	r, err := wasm.New(context.Background(), wasm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := prepare(t, r, watGuest(t, "echo"), newEnv(t), nil)
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background(), runner.Request{Input: []byte("{}")}); err == nil {
		t.Fatal("run on a closed runner succeeded")
	}
}

// TestPrepare_runsTheLoadedBytes: a tool loaded from its manifest runs the
// module as it was when it loaded. A rewrite cached under the loaded
// digest is used without reading the module again, so a module changed
// after load is never run; without such a rewrite the module is read and
// the change is a LOAD_ERROR.
func TestPrepare_runsTheLoadedBytes(t *testing.T) {
	src := filepath.Join("..", "..", "..", "toolpacks", "core")
	code, err := os.ReadFile(filepath.Join(src, "echo.wasm"))
	if err != nil {
		t.Skipf("toolpacks not built: %v", err)
	}
	dir := t.TempDir()
	for _, f := range []string{"echo.tool.json", "README.md"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	modulePath := filepath.Join(dir, "echo.wasm")
	if err := os.WriteFile(modulePath, code, 0o644); err != nil {
		t.Fatal(err)
	}
	load := func() *manifest.Tool {
		tool, err := manifest.Load(filepath.Join(dir, "echo.tool.json"))
		if err != nil {
			t.Fatal(err)
		}
		return tool
	}
	e := newEnv(t)
	cache := t.TempDir()
	runnerAt := func(cache string) *wasm.Runner {
		r, err := wasm.New(context.Background(), wasm.Options{CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close(context.Background()) })
		return r
	}
	// The first runner reads the module and caches its rewrite.
	first := load()
	p, err := runnerAt(cache).Prepare(context.Background(), first, e.grant(first.Dir))
	if err != nil {
		t.Fatal(err)
	}
	if res := run(t, p, `{"a":1}`); res.Err != nil || strings.TrimSpace(string(res.Output)) != `{"a":1}` {
		t.Fatalf("first runner: %v %s", res.Err, res.Output)
	}

	loaded := load()
	// The module changes after its manifest loaded (a valid module, so
	// only the digest tells the two apart).
	if err := os.WriteFile(modulePath, append(code, 0, 4, 'n', 'o', 't', 'e'), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err = runnerAt(cache).Prepare(context.Background(), loaded, e.grant(loaded.Dir))
	if err != nil {
		t.Fatalf("with the cached rewrite: %v", err)
	}
	if res := run(t, p, `{"b":2}`); res.Err != nil || strings.TrimSpace(string(res.Output)) != `{"b":2}` {
		t.Fatalf("with the cached rewrite: %v %s", res.Err, res.Output)
	}
	_, err = runnerAt(t.TempDir()).Prepare(context.Background(), loaded, e.grant(loaded.Dir))
	if !errors.Is(err, abi.ErrLoadError) || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("without a cached rewrite, a module changed since load: %v", err)
	}
}
