package wasm_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/wasm"
)

// newTieredRunner returns a tiering Runner over a new, empty cache
// folder (so no module is at hand and every tool starts on the
// interpreter) and the function that lets its background compiles go
// (held until then, or until the test ends, after the runner is closed).
func newTieredRunner(t *testing.T, budget uint64) (*wasm.Runner, string, func()) {
	t.Helper()
	cache := t.TempDir()
	r, err := wasm.New(context.Background(), wasm.Tiered(wasm.Options{CacheDir: cache, PoolMemoryBytes: budget}))
	if err != nil {
		t.Fatal(err)
	}
	release := wasm.HoldUpgrades(r)
	t.Cleanup(release)
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r, cache, release
}

// TestTier_limits runs every limit's allowed and denied case on the
// interpreter tier (the compile held back): the same codes as the
// compiled tier (TestAdversarial, TestBothPaths).
func TestTier_limits(t *testing.T) {
	short := func(g *policy.Grant) { g.Limits.Timeout = time.Second }
	fuel := func(n uint64) func(*policy.Grant) { return func(g *policy.Grant) { g.Limits.Fuel = n } }
	memory := func(n uint64) func(*policy.Grant) { return func(g *policy.Grant) { g.Limits.MemoryBytes = n } }
	wat := func(name string) func(testing.TB) string {
		return func(t testing.TB) string { return watGuest(t, name) }
	}
	tests := []struct {
		name    string
		guest   func(testing.TB) string // nil: the Go probe, as reactor and as command
		input   string
		edit    func(*policy.Grant)
		want    abi.Code
		message string
		check   func(t *testing.T, res runner.Result)
	}{
		{name: "timeout: loop", guest: wat("loop"), input: "{}", edit: short, want: abi.CodeTimeout},
		{name: "timeout: sleep", guest: wat("sleep"), input: "{}", edit: short, want: abi.CodeTimeout},
		{name: "timeout: allowed", guest: wat("echo"), input: benignWAT, edit: short, want: ""},
		{name: "timeout: go loop", input: `{"op":"loop"}`, edit: func(g *policy.Grant) { g.Limits.Timeout = 2 * time.Second }, want: abi.CodeTimeout},
		{name: "memory: bomb", guest: wat("membomb"), input: "{}", edit: memory(8 << 20), want: abi.CodeMemoryLimit},
		{name: "memory: go bomb", input: `{"op":"alloc","mb":4}`, edit: memory(48 << 20), want: abi.CodeMemoryLimit},
		{name: "memory: allowed", input: `{"op":"echo"}`, edit: memory(48 << 20), want: ""},
		{name: "output: flood", guest: wat("flood"), input: "{}", want: abi.CodeOutputLimit,
			check: func(t *testing.T, res runner.Result) {
				if len(res.Output) != 1<<20 {
					t.Errorf("kept %d bytes, want the 1 MiB cap", len(res.Output))
				}
			}},
		{name: "output: go flood", input: `{"op":"flood","mb":3}`, want: abi.CodeOutputLimit},
		{name: "output: allowed", input: `{"op":"echo"}`, want: ""},
		{name: "fuel: exhausted", input: `{"op":"loop"}`, edit: fuel(5_000_000), want: abi.CodeFuelExhausted,
			check: func(t *testing.T, res runner.Result) {
				if res.Usage.Fuel == nil || *res.Usage.Fuel != 5_000_000 {
					t.Errorf("fuel %v, want 5000000", res.Usage.Fuel)
				}
			}},
		{name: "fuel: allowed", input: `{"op":"echo"}`, edit: fuel(1_000_000_000), want: "",
			check: func(t *testing.T, res runner.Result) {
				if res.Usage.Fuel == nil || *res.Usage.Fuel == 0 {
					t.Errorf("fuel %v, want a count", res.Usage.Fuel)
				}
			}},
		{name: "files: read /etc/passwd", input: `{"op":"read","path":"/etc/passwd"}`, want: abi.CodePermissionDenied, message: "denied: open /etc/passwd (read)"},
		{name: "files: write the tool mount", input: `{"op":"write","path":"/tool/tool.wasm","data":"x"}`, want: abi.CodePermissionDenied},
		{name: "files: allowed read", input: `{"op":"read","path":"/workspace/public.txt"}`, want: ""},
		{name: "trap", guest: wat("trap"), input: "{}", want: abi.CodeToolError, message: "unreachable"},
		{name: "deep recursion", guest: wat("recurse"), input: "{}", want: abi.CodeToolError, message: "stack overflow"},
		{name: "panic", input: `{"op":"panic"}`, want: abi.CodeToolError, message: "panic: probe panic"},
	}
	e := newEnv(t)
	r, _, _ := newTieredRunner(t, 64<<20)
	for _, tc := range tests {
		guests := map[string]func(testing.TB) string{"wat": tc.guest}
		if tc.guest == nil {
			guests = map[string]func(testing.TB) string{
				modeReactor: func(t testing.TB) string { return probeGuest(t, modeReactor) },
				modeCommand: func(t testing.TB) string { return probeGuest(t, modeCommand) },
			}
		}
		for kind, guest := range guests {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				p := prepare(t, r, guest(t), e, tc.edit)
				if got := wasm.Tier(p); got != "interpreter" {
					t.Fatalf("tier %s, want interpreter", got)
				}
				res := run(t, p, tc.input)
				if code(res) != tc.want {
					t.Fatalf("code %q (%v), want %q; logs %q", code(res), res.Err, tc.want, res.Logs)
				}
				if tc.message != "" && !strings.Contains(res.Err.Message, tc.message) {
					t.Errorf("message %q does not contain %q", res.Err.Message, tc.message)
				}
				if tc.check != nil {
					tc.check(t, res)
				}
			})
		}
	}
}

// TestTier_switch: a tool prepared on the interpreter switches to the
// compiled tier once its compile ends, with the same results (output and
// fuel) on both; Warm waits for the compiled tier and its pool; once both
// tools of the module have switched, its interpreter code is released; the
// compiled module lands in the cache, so a second runner over it starts
// on the compiled tier. The reactor is the Go probe (start-up snapshot
// taken on the interpreter, reused compiled); the command a WAT guest
// (compiled in milliseconds, even under -race).
func TestTier_switch(t *testing.T) {
	e := newEnv(t)
	metered := func(g *policy.Grant) { g.Limits.Fuel = 1_000_000_000; g.Limits.Deterministic = true }
	for _, tc := range []struct {
		name, input string
		guest       func(testing.TB) string
	}{
		{name: modeReactor, input: `{"op":"read","path":"/workspace/public.txt"}`, guest: func(t testing.TB) string { return probeGuest(t, modeReactor) }},
		{name: modeCommand, input: benignWAT, guest: func(t testing.TB) string { return watGuest(t, "echo") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, cache, release := newTieredRunner(t, 64<<20)
			module := tc.guest(t)
			p := prepare(t, r, module, e, metered)
			// A second tool of the module, pooled on the compiled tier
			// (not deterministic): its upgrade shares the compile.
			pooled := prepare(t, r, module, e, nil)
			for _, p := range []runner.Prepared{p, pooled} {
				if got := wasm.Tier(p); got != "interpreter" {
					t.Fatalf("tier %s before the compile, want interpreter", got)
				}
			}
			before := run(t, p, tc.input)
			release()
			if w, ok := pooled.(interface {
				Warm(context.Context) wasm.WarmState
			}); !ok {
				t.Fatal("a tiered tool has no Warm")
			} else if s := w.Warm(context.Background()); tc.name == modeReactor && s != wasm.WarmReady {
				t.Fatalf("warm %v, want ready", s)
			}
			if got := wasm.Tier(pooled); got != "compiled" {
				t.Fatalf("tier %s after Warm, want compiled", got)
			}
			wasm.WaitTier(p)
			if got := wasm.Tier(p); got != "compiled" {
				t.Fatalf("tier %s after the compile, want compiled", got)
			}
			// Both tools switched: their interpreter module is released.
			if n := wasm.InterpModules(r); n != 0 {
				t.Errorf("%d interpreter modules held after the switch, want 0", n)
			}
			after := run(t, p, tc.input)
			if before.Err != nil || after.Err != nil {
				t.Fatalf("calls failed: %v / %v", before.Err, after.Err)
			}
			if string(before.Output) != string(after.Output) || len(before.Output) == 0 {
				t.Errorf("output %q on the interpreter, %q compiled", before.Output, after.Output)
			}
			if before.Usage.Fuel == nil || after.Usage.Fuel == nil || *before.Usage.Fuel != *after.Usage.Fuel {
				t.Errorf("fuel %v on the interpreter, %v compiled", before.Usage.Fuel, after.Usage.Fuel)
			}
			r2, err := wasm.New(context.Background(), wasm.Tiered(wasm.Options{CacheDir: cache, PoolMemoryBytes: 64 << 20}))
			if err != nil {
				t.Fatal(err)
			}
			defer r2.Close(context.Background())
			p2 := prepare(t, r2, module, e, metered)
			if got := wasm.Tier(p2); got != "compiled" {
				t.Fatalf("a new runner over the cache: tier %s, want compiled", got)
			}
			if again := run(t, p2, tc.input); string(again.Output) != string(before.Output) || again.Usage.Fuel == nil || *again.Usage.Fuel != *before.Usage.Fuel {
				t.Errorf("a new runner: output %q fuel %v", again.Output, again.Usage.Fuel)
			}
		})
	}
}

// TestTier_lazy: a tool on the interpreter starts its compile only once
// it is wanted: after its third call, or at Warm, never at Prepare; one
// closed before either never compiles, and its Warm returns. Its
// interpreter module is held while it runs there and released once it
// is closed or compiled.
func TestTier_lazy(t *testing.T) {
	e := newEnv(t)
	wat := func(t testing.TB) string { return watGuest(t, "echo") }
	tests := []struct {
		name      string
		calls     int
		warm      bool
		close     bool
		upgrading bool
	}{
		{name: "prepared", calls: 0, upgrading: false},
		{name: "two calls", calls: 2, upgrading: false},
		{name: "third call", calls: 3, upgrading: true},
		{name: "warm", calls: 0, warm: true, upgrading: true},
		{name: "closed, then warm", calls: 1, close: true, warm: true, upgrading: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _, release := newTieredRunner(t, 64<<20)
			wasm.TierTriggers(r, 3)
			release() // an upgrade, once started, runs at once
			p := prepare(t, r, wat(t), e, nil)
			if got := wasm.Tier(p); got != "interpreter" {
				t.Fatalf("tier %s, want interpreter", got)
			}
			for range tc.calls {
				if res := run(t, p, benignWAT); res.Err != nil {
					t.Fatalf("call: %v", res.Err)
				}
			}
			if tc.close {
				if c, ok := p.(runner.Closer); ok {
					_ = c.Close()
				}
			}
			if tc.warm {
				p.(interface {
					Warm(context.Context) wasm.WarmState
				}).Warm(context.Background())
			}
			if got := wasm.Upgrading(p); got != tc.upgrading {
				t.Fatalf("compile started %v, want %v", got, tc.upgrading)
			}
			// The interpreter module is held while the tool runs there,
			// released once it is closed or compiled.
			if n, want := wasm.InterpModules(r), 1; tc.close {
				if n != 0 {
					t.Errorf("%d interpreter modules held after Close, want 0", n)
				}
			} else if !tc.upgrading && n != want {
				t.Errorf("%d interpreter modules held, want %d", n, want)
			}
			if tc.upgrading {
				wasm.WaitTier(p)
				if got := wasm.Tier(p); got != "compiled" {
					t.Fatalf("tier %s after the compile, want compiled", got)
				}
				if res := run(t, p, benignWAT); res.Err != nil {
					t.Fatalf("call on the compiled tier: %v", res.Err)
				}
				if n := wasm.InterpModules(r); n != 0 {
					t.Errorf("%d interpreter modules held on the compiled tier, want 0", n)
				}
			}
		})
	}
}
