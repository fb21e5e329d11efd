package wasm_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/wasm"
)

// path is one way a guest-SDK tool can run.
type path struct {
	name   string
	mode   string // modeCommand or modeReactor
	budget uint64 // pool budget of the runner
	reuse  bool   // instances are reused
	park   bool   // a command whose instances are parked (park.go)
}

// paths are the four ways: the slow path (a command), the fast path with
// a fresh instance per call (no pool budget), the fast path on reused
// pooled instances, and the command build on parked pooled instances.
var paths = []path{
	{name: "slow", mode: modeCommand},
	{name: "command-parked", mode: modeCommand, budget: 64 << 20, park: true},
	{name: "fast-fresh", mode: modeReactor},
	{name: "fast-reused", mode: modeReactor, budget: 64 << 20, reuse: true},
}

// waitParked waits until a parked path's tool has a parked instance, so
// the calls that follow run on one; want says whether the tool can be
// parked at all.
func waitParked(t *testing.T, pa path, p runner.Prepared, want bool) {
	t.Helper()
	if !pa.park {
		return
	}
	if got := wasm.Parks(p) && wasm.WaitParked(p); got != want {
		t.Fatalf("parked %v, want %v", got, want)
	}
}

// probeOut is the probe guest's answer.
type probeOut struct {
	Args  []string `json:"args"`
	Env   []string `json:"env"`
	Dirty []string `json:"dirty"`
	Data  string   `json:"data"`
	Calls int      `json:"calls"`
	// Length is the probe's length field (keeproot: a descriptor).
	Length int `json:"length"`
}

func decodeProbe(t *testing.T, res runner.Result) probeOut {
	t.Helper()
	return decodeOut[probeOut](t, res)
}

// decodeOut decodes a successful call's output; a failed call or an
// output that does not decode fails t.
func decodeOut[T any](t *testing.T, res runner.Result) T {
	t.Helper()
	if res.Err != nil {
		t.Fatalf("call failed: %v (logs %q)", res.Err, res.Logs)
	}
	var o T
	if err := json.Unmarshal(res.Output, &o); err != nil {
		t.Fatalf("output %q: %v", res.Output, err)
	}
	return o
}

func TestFastPath_detection(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name       string
		mode       string
		budget     uint64
		edit       func(*policy.Grant)
		fast, pool bool
	}{
		{"command takes the slow path", modeCommand, 64 << 20, nil, false, false},
		{"reactor takes the fast path", modeReactor, 64 << 20, nil, true, true},
		{"no budget: fresh instances", modeReactor, 0, nil, true, false},
		{"deterministic: fresh instances", modeReactor, 64 << 20, func(g *policy.Grant) { g.Limits.Deterministic = true }, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newPoolRunner(t, tc.budget)
			p := prepare(t, r, probeGuest(t, tc.mode), e, tc.edit)
			if wasm.IsFast(p) != tc.fast || wasm.Reuses(p) != tc.pool {
				t.Fatalf("fast %v reuse %v, want %v %v", wasm.IsFast(p), wasm.Reuses(p), tc.fast, tc.pool)
			}
			if o := decodeProbe(t, run(t, p, `{"op":"echo"}`)); o.Calls != 1 {
				t.Fatalf("calls %d", o.Calls)
			}
		})
	}
}

func TestFastPath_refusesReactorWithoutRun(t *testing.T) {
	r := newPoolRunner(t, 64<<20)
	e := newEnv(t)
	tool := toolFor(t, sdkGuest(t, "testdata/reactor/norun", modeReactor))
	_, err := r.Prepare(context.Background(), tool, e.grant(tool.Dir))
	var ae *abi.Error
	if !errors.As(err, &ae) || ae.Code != abi.CodeLoadError || !strings.Contains(err.Error(), "did not call guest.Run") {
		t.Fatalf("err %v, want LOAD_ERROR naming guest.Run", err)
	}
	if !strings.Contains(err.Error(), "main returns without guest.Run") {
		t.Errorf("err %v lacks the guest's log line", err)
	}
}

// TestBothPaths runs the adversarial cases on every path: each limit and
// failure gives the same code, and the next call succeeds.
func TestBothPaths(t *testing.T) {
	short := func(g *policy.Grant) { g.Limits.Timeout = 500 * time.Millisecond }
	tests := []struct {
		name    string
		input   string
		edit    func(*policy.Grant)
		want    abi.Code
		message string
	}{
		{name: "tool error", input: `{"op":"fail"}`, want: abi.CodeToolError, message: "probe failure"},
		{name: "exit code", input: `{"op":"exit","code":3}`, want: abi.CodeToolError, message: "exit status 3"},
		{name: "panic", input: `{"op":"panic"}`, want: abi.CodeToolError, message: "panic: probe panic"},
		{name: "infinite loop", input: `{"op":"loop"}`, edit: short, want: abi.CodeTimeout},
		{name: "sleep past timeout", input: `{"op":"sleep","ms":60000}`, edit: short, want: abi.CodeTimeout},
		{name: "memory bomb", input: `{"op":"alloc","mb":4}`, edit: func(g *policy.Grant) { g.Limits.MemoryBytes = 48 << 20 }, want: abi.CodeMemoryLimit},
		{name: "output flood", input: `{"op":"flood","mb":3}`, want: abi.CodeOutputLimit},
		{name: "read /etc/passwd", input: `{"op":"read","path":"/etc/passwd"}`, want: abi.CodePermissionDenied, message: "denied: open /etc/passwd (read)"},
		{name: "write the tool mount", input: `{"op":"write","path":"/tool/tool.wasm","data":"x"}`, want: abi.CodePermissionDenied},
		{name: "fuel", input: `{"op":"loop"}`, edit: func(g *policy.Grant) { g.Limits.Fuel = 5_000_000 }, want: abi.CodeFuelExhausted},
		{name: "snapshot above the memory cap", input: `{"op":"echo"}`, edit: func(g *policy.Grant) { g.Limits.MemoryBytes = 1 << 20 }, want: abi.CodeMemoryLimit},
		{name: "allowed read", input: `{"op":"read","path":"/workspace/public.txt"}`, want: ""},
		{name: "tmp write", input: `{"op":"write","path":"/tmp/x","data":"x"}`, want: ""},
	}
	e := newEnv(t)
	for _, pa := range paths {
		t.Run(pa.name, func(t *testing.T) {
			r := newPoolRunner(t, pa.budget)
			module := probeGuest(t, pa.mode)
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					tool := toolFor(t, module)
					g := e.grant(tool.Dir)
					if tc.edit != nil {
						tc.edit(g)
					}
					p, err := r.Prepare(context.Background(), tool, g)
					if tc.name == "snapshot above the memory cap" && pa.mode == modeReactor {
						// The start-up itself needs more than the cap:
						// the tool cannot be loaded.
						if err == nil || !strings.Contains(err.Error(), "MEMORY_LIMIT") {
							t.Fatalf("prepare: %v, want a start-up MEMORY_LIMIT", err)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					waitParked(t, pa, p, tc.name != "snapshot above the memory cap")
					res := run(t, p, tc.input)
					if code(res) != tc.want {
						t.Fatalf("code %q (%v), want %q; logs %q", code(res), res.Err, tc.want, res.Logs)
					}
					if tc.message != "" && !strings.Contains(res.Err.Message, tc.message) {
						t.Errorf("message %q does not contain %q", res.Err.Message, tc.message)
					}
					if tc.want == abi.CodeOutputLimit && len(res.Output) != 1<<20 {
						t.Errorf("kept %d bytes, want the 1 MiB cap", len(res.Output))
					}
					if tc.want == abi.CodeFuelExhausted && (res.Usage.Fuel == nil || *res.Usage.Fuel != 5_000_000) {
						t.Errorf("fuel %v, want 5000000", res.Usage.Fuel)
					}
					if tc.name == "snapshot above the memory cap" {
						return // every call of this tool fails the same way
					}
					for range 2 {
						if o := decodeProbe(t, run(t, p, `{"op":"recall"}`)); o.Calls != 1 || len(o.Dirty) > 0 {
							t.Fatalf("next call: calls %d, dirty %q", o.Calls, o.Dirty)
						}
					}
				})
			}
		})
	}
}

// TestNoLeak has a guest store a secret in every place it can (a package
// variable, a heap allocation, a static buffer, a /tmp file, the
// environment) and the next calls look for it there and anywhere in
// memory; on every path, nothing survives a call.
func TestNoLeak(t *testing.T) {
	e := newEnv(t)
	for _, pa := range paths {
		t.Run(pa.name, func(t *testing.T) {
			r := newPoolRunner(t, pa.budget)
			p := prepare(t, r, probeGuest(t, pa.mode), e, nil)
			waitParked(t, pa, p, true)
			for i := range 6 {
				secret := randomSecret(t)
				remember := `{"op":"remember","secret":"` + secret + `"}`
				if o := decodeProbe(t, run(t, p, remember)); o.Calls != 1 {
					t.Fatalf("remember: calls %d", o.Calls)
				}
				recall := `{"op":"recall","secret":"` + reverse(secret) + `"}`
				if o := decodeProbe(t, run(t, p, recall)); o.Calls != 1 || len(o.Dirty) > 0 {
					t.Fatalf("round %d: calls %d, the secret survived in %q", i, o.Calls, o.Dirty)
				}
			}
		})
	}
}

// TestNoLeak_scanFindsTheSecret shows the memory scan can fail: within
// one call the secret, stored, is found.
func TestNoLeak_scanFindsTheSecret(t *testing.T) {
	r := newPoolRunner(t, 0)
	p := prepare(t, r, probeGuest(t, modeReactor), newEnv(t), nil)
	secret := randomSecret(t)
	// remember then recall in one call is not an op; instead pass the
	// secret forward (not reversed) to recall: its own input holds it.
	o := decodeProbe(t, run(t, p, `{"op":"recall","secret":"`+secret+`","data":"`+reverse(secret)+`"}`))
	if len(o.Dirty) != 1 || o.Dirty[0] != "memory" {
		t.Fatalf("dirty %q, want the scan to find the reversed secret of its own input", o.Dirty)
	}
}

// TestNoLeak_concurrent mixes remember and recall from several
// goroutines on reused instances.
func TestNoLeak_concurrent(t *testing.T) {
	r := newPoolRunner(t, 64<<20)
	p := prepare(t, r, probeGuest(t, modeReactor), newEnv(t), nil)
	concurrently(t, 4, func(int) error {
		for range 5 {
			secret := randomSecret(t)
			res, err := p.Run(context.Background(), runner.Request{Input: []byte(`{"op":"remember","secret":"` + secret + `"}`)})
			if err != nil || res.Err != nil {
				return errors.New("remember failed")
			}
			res, err = p.Run(context.Background(), runner.Request{Input: []byte(`{"op":"recall","secret":"` + reverse(secret) + `"}`)})
			var o probeOut
			if err != nil || res.Err != nil || json.Unmarshal(res.Output, &o) != nil || o.Calls != 1 || len(o.Dirty) > 0 {
				return errors.New("recall saw " + string(res.Output))
			}
		}
		return nil
	})
}

// TestReuse_discards checks that an instance a call left in a state a
// reset cannot undo is discarded, and the next call still starts pristine.
func TestReuse_discards(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		discard bool
	}{
		{"plain call is reused", `{"op":"echo"}`, false},
		{"tool error is reused", `{"op":"fail"}`, false},
		{"memory grown", `{"op":"grow","mb":32}`, true},
		{"file left open", `{"op":"leak"}`, true},
		{"file read and closed", `{"op":"read","path":"/workspace/public.txt"}`, false},
		{"file written and closed", `{"op":"write","path":"/tmp/x","data":"x"}`, false},
		{"mount root kept open", `{"op":"keeproot"}`, false},
		{"stdout closed", `{"op":"closefd","code":1}`, true},
		{"mount closed", `{"op":"closefd","code":4}`, true},
		{"exit", `{"op":"exit","code":2}`, true},
		{"trap", `{"op":"recurse"}`, true},
	}
	e := newEnv(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newPoolRunner(t, 64<<20)
			p := prepare(t, r, probeGuest(t, modeReactor), e, nil)
			if !wasm.WaitReady(p) {
				t.Fatal("the pool made no instance")
			}
			hits, _, before := wasm.SlotStats(p)
			_, _ = p.Run(context.Background(), runner.Request{Input: []byte(tc.input)})
			hits2, _, after := wasm.SlotStats(p)
			if hits2 != hits+1 {
				t.Fatal("the call did not run on a pooled instance")
			}
			if got := after > before; got != tc.discard {
				t.Fatalf("discarded %v, want %v", got, tc.discard)
			}
			for range PoolTargetCalls {
				res := run(t, p, `{"op":"echo"}`)
				if o := decodeProbe(t, res); o.Calls != 1 {
					t.Fatalf("next call: calls %d", o.Calls)
				}
				if res.Usage.MemoryBytes != uint64(wasm.SnapshotBytes(p)) {
					t.Fatalf("memory %d, want the snapshot's %d", res.Usage.MemoryBytes, wasm.SnapshotBytes(p))
				}
				if o := decodeProbe(t, run(t, p, `{"op":"recall"}`)); o.Calls != 1 || len(o.Dirty) > 0 {
					t.Fatalf("next call: calls %d dirty %q", o.Calls, o.Dirty)
				}
			}
		})
	}
}

// TestReuse_keptRoot: a guest that keeps a mount's root open across calls
// (a descriptor the next call can still use) sees only the current call's
// folder through it, never what an earlier call left in its /tmp; and an
// instance whose guest keeps opening roots is discarded once it holds
// more than wazero's own one per mount.
func TestReuse_keptRoot(t *testing.T) {
	_, p := pooledProbe(t, false)
	fds := map[int]bool{}
	for range PoolTargetCalls {
		fds[decodeProbe(t, run(t, p, `{"op":"keeproot"}`)).Length] = true
	}
	_, _, discards := wasm.SlotStats(p)
	if discards != 0 {
		t.Fatalf("%d instances discarded for a kept root", discards)
	}
	for range 2 * PoolTargetCalls {
		for fd := range fds {
			res, err := p.Run(context.Background(), runner.Request{Input: []byte(fmt.Sprintf(`{"op":"listfd","code":%d}`, fd))})
			if err != nil {
				t.Fatal(err)
			}
			if res.Err != nil {
				continue // not open in this instance
			}
			if o := decodeProbe(t, res); strings.Contains(o.Data, "left-behind") {
				t.Fatalf("descriptor %d shows an earlier call's /tmp: %q", fd, o.Data)
			}
		}
	}
	for range 8 * PoolTargetCalls {
		run(t, p, `{"op":"keeproot"}`)
	}
	if _, _, discards := wasm.SlotStats(p); discards == 0 {
		t.Fatal("instances that keep opening roots were never discarded")
	}
}

// PoolTargetCalls is enough calls to go through every pooled instance.
const PoolTargetCalls = wasm.PoolTarget + 1

func TestFastPath_deterministic(t *testing.T) {
	e := newEnv(t)
	r := newPoolRunner(t, 64<<20)
	fixed := prepare(t, r, probeGuest(t, modeReactor), e, func(g *policy.Grant) { g.Limits.Deterministic = true })
	a, b := decodeProbe(t, run(t, fixed, `{"op":"now"}`)), decodeProbe(t, run(t, fixed, `{"op":"now"}`))
	if a.Data == "" || a.Data != b.Data {
		t.Fatalf("deterministic calls differ: %q vs %q", a.Data, b.Data)
	}
	real := prepare(t, r, probeGuest(t, modeReactor), e, nil)
	c, d := decodeProbe(t, run(t, real, `{"op":"now"}`)), decodeProbe(t, run(t, real, `{"op":"now"}`))
	if c.Data == d.Data || c.Data == a.Data {
		t.Fatalf("real clock and randomness repeat: %q, %q", c.Data, d.Data)
	}
}

func TestFastPath_argsAndEnv(t *testing.T) {
	e := newEnv(t)
	for _, pa := range paths {
		t.Run(pa.name, func(t *testing.T) {
			r := newPoolRunner(t, pa.budget)
			p := prepare(t, r, probeGuest(t, pa.mode), e, func(g *policy.Grant) {
				g.Config = map[string]string{"mode": "x"}
				g.Env = map[string]string{"GREETING": "hi"}
			})
			waitParked(t, pa, p, true)
			o := decodeProbe(t, run(t, p, `{"op":"echo"}`))
			if strings.Join(o.Args, " ") != "test:guest --mode=x" || strings.Join(o.Env, " ") != "GREETING=hi" {
				t.Fatalf("args %q env %q", o.Args, o.Env)
			}
		})
	}
}

func TestPool_budgetAndClose(t *testing.T) {
	e := newEnv(t)
	probe := probeGuest(t, modeReactor)
	// Find the snapshot size, then allow two instances.
	sizer := newPoolRunner(t, 0)
	size := uint64(wasm.SnapshotBytes(prepare(t, sizer, probe, e, nil)))
	r := newPoolRunner(t, 2*size)
	p := prepare(t, r, probe, e, nil)
	for range 3 * wasm.PoolTarget {
		decodeProbe(t, run(t, p, `{"op":"echo"}`))
	}
	if used := wasm.PoolBytes(r); used > 2*size || used == 0 {
		t.Fatalf("pools hold %d bytes, budget %d", used, 2*size)
	}
	if err := p.(interface{ Close() error }).Close(); err != nil {
		t.Fatal(err)
	}
	if used := wasm.PoolBytes(r); used != 0 {
		t.Fatalf("pools hold %d bytes after Close", used)
	}
	// A closed pool still serves calls, from fresh instances.
	decodeProbe(t, run(t, p, `{"op":"echo"}`))
	q := prepare(t, r, probe, e, nil)
	decodeProbe(t, run(t, q, `{"op":"echo"}`))
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if used := wasm.PoolBytes(r); used != 0 {
		t.Fatalf("pools hold %d bytes after the runner's Close", used)
	}
}

// TestPool_concurrentClose closes a tool and its runner at once, right
// after a call gave an instance back for restoring: every Close returns
// only once the pool's goroutine has ended, so the runtime is never
// released under a restore in progress (the race detector's check).
func TestPool_concurrentClose(t *testing.T) {
	e := newEnv(t)
	probe := probeGuest(t, modeReactor)
	for range 20 {
		r := newPoolRunner(t, 64<<20)
		p := prepare(t, r, probe, e, nil)
		decodeProbe(t, run(t, p, `{"op":"echo"}`))
		var wg sync.WaitGroup
		ended := make(chan bool, 3)
		for i := range 3 {
			wg.Go(func() {
				if i == 0 {
					_ = r.Close(context.Background())
				} else {
					_ = p.(interface{ Close() error }).Close()
				}
				ended <- wasm.PoolEnded(p)
			})
		}
		wg.Wait()
		close(ended)
		for ok := range ended {
			if !ok {
				t.Fatal("a Close returned while the pool's goroutine still ran")
			}
		}
	}
}

func randomSecret(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "secret-" + hex.EncodeToString(b)
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// TestFastPath_noCollectionPerCall checks that calls do not inherit a
// pending collection from the snapshot: the collection count a call sees
// is the same every time.
func TestFastPath_noCollectionPerCall(t *testing.T) {
	r := newPoolRunner(t, 64<<20)
	p := prepare(t, r, probeGuest(t, modeReactor), newEnv(t), nil)
	first := decodeProbe(t, run(t, p, `{"op":"gcstats"}`)).Data
	if !strings.HasPrefix(first, "numgc=") {
		t.Fatalf("gcstats %q", first)
	}
	for range PoolTargetCalls {
		if got := decodeProbe(t, run(t, p, `{"op":"gcstats"}`)).Data; got != first {
			t.Fatalf("gcstats %q, then %q", first, got)
		}
	}
}
