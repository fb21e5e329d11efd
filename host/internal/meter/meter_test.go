package meter_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/internal/meter"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
)

// TestCount_exact pins the cost model: count(n) executes 9n+7
// instructions, whatever the slice size.
func TestCount_exact(t *testing.T) {
	r := newRuntime(t, nil)
	c := compile(t, r, instrument(t, readFile(t, "testdata/wat/count.wasm")))
	for _, n := range []uint64{0, 1, 5, 1000} {
		for _, slice := range []uint64{1, 2, 3, 7, 100, 0} {
			t.Run(fmt.Sprintf("n=%d/slice=%d", n, slice), func(t *testing.T) {
				b := &meter.Budget{Slice: slice}
				res, err := call(meter.WithBudget(context.Background(), b), r, c, "count", n)
				if err != nil {
					t.Fatal(err)
				}
				if res[0] != n {
					t.Errorf("count(%d) = %d", n, res[0])
				}
				if got, want := b.Used(), 9*n+7; got != want {
					t.Errorf("Used() = %d, want %d", got, want)
				}
			})
		}
	}
}

// TestCount_loopWithParams pins the count of a loop with a parameter,
// whose check refills inline instead of through a pad: countdown(5)
// executes local.get, loop and 5 iterations of 7 instructions, after the
// module's start function (2 instructions, run by the instantiation under
// the same budget).
func TestCount_loopWithParams(t *testing.T) {
	r := newRuntime(t, nil)
	c := compile(t, r, instrument(t, readFile(t, "testdata/wat/features.wasm")))
	for _, slice := range []uint64{1, 2, 0} {
		b := &meter.Budget{Slice: slice}
		res, err := call(meter.WithBudget(context.Background(), b), r, c, "countdown", 5)
		if err != nil || res[0] != 0 {
			t.Fatalf("slice %d: countdown(5) = %v, %v", slice, res, err)
		}
		if b.Used() != 2+37 {
			t.Errorf("slice %d: Used() = %d, want 39", slice, b.Used())
		}
	}
}

// TestTrap_usedExact checks that the fuel of a call ending in a guest
// trap is still exact: boom(n) runs count(n) and hits unreachable after
// 9n+11 instructions.
func TestTrap_usedExact(t *testing.T) {
	r := newRuntime(t, nil)
	c := compile(t, r, instrument(t, readFile(t, "testdata/wat/count.wasm")))
	for _, slice := range []uint64{1, 4, 0} {
		b := &meter.Budget{Slice: slice}
		_, err := call(meter.WithBudget(context.Background(), b), r, c, "boom", 30)
		if err == nil || !strings.Contains(err.Error(), "unreachable") || meter.ErrorOf(err) != nil {
			t.Fatalf("slice %d: err %v, want an unreachable trap", slice, err)
		}
		if got, want := b.Used(), uint64(9*30+11); got != want {
			t.Errorf("slice %d: Used() = %d, want %d", slice, got, want)
		}
	}
}

// TestFuel_boundary checks that a fuel limit equal to the use passes and
// one unit less stops the call with FUEL_EXHAUSTED.
func TestFuel_boundary(t *testing.T) {
	r := newRuntime(t, nil)
	c := compile(t, r, instrument(t, readFile(t, "testdata/wat/count.wasm")))
	const n = 50
	tests := []struct {
		name    string
		fuel    uint64
		wantErr abi.Code
	}{
		{"exact", 9*n + 7, ""},
		{"one short", 9*n + 6, abi.CodeFuelExhausted},
		{"ample", 1 << 40, ""},
		{"one", 1, abi.CodeFuelExhausted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &meter.Budget{Fuel: tc.fuel, Slice: 7}
			_, err := call(meter.WithBudget(context.Background(), b), r, c, "count", n)
			if tc.wantErr == "" {
				if err != nil || b.Err() != nil {
					t.Fatalf("err = %v, budget err = %v", err, b.Err())
				}
				return
			}
			e := meter.ErrorOf(err)
			if e == nil || e.Code != tc.wantErr {
				t.Fatalf("ErrorOf(%v) = %v, want %s", err, e, tc.wantErr)
			}
			if b.Err() == nil || b.Err().Code != tc.wantErr {
				t.Errorf("Budget.Err() = %v", b.Err())
			}
			if b.Used() != tc.fuel {
				t.Errorf("Used() = %d, want the limit %d", b.Used(), tc.fuel)
			}
		})
	}
}

// TestLoop_stops stops a call-free infinite loop with fuel, with a
// timeout, with both and with a cancellation.
func TestLoop_stops(t *testing.T) {
	r := newRuntime(t, nil)
	c := compile(t, r, instrument(t, readFile(t, "testdata/wat/loop.wasm")))
	tests := []struct {
		name    string
		fuel    uint64
		timeout time.Duration
		cancel  bool
		want    abi.Code
	}{
		{"fuel", 1_000_000, 0, false, abi.CodeFuelExhausted},
		{"timeout", 0, 50 * time.Millisecond, false, abi.CodeTimeout},
		{"fuel before timeout", 1_000_000, time.Hour, false, abi.CodeFuelExhausted},
		{"timeout before fuel", 1 << 62, 50 * time.Millisecond, false, abi.CodeTimeout},
		{"cancel", 0, 0, true, abi.CodeTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			if tc.cancel {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(20*time.Millisecond, cancel)
			}
			b := &meter.Budget{Fuel: tc.fuel}
			_, err := call(meter.WithBudget(ctx, b), r, c, "spin")
			if e := meter.ErrorOf(err); e == nil || e.Code != tc.want {
				t.Fatalf("ErrorOf(%v) = %v, want %s", err, e, tc.want)
			}
			if !errors.Is(err, &abi.Error{Code: tc.want}) {
				t.Errorf("errors.Is(err, %s) = false", tc.want)
			}
			if tc.want == abi.CodeFuelExhausted && b.Used() != tc.fuel {
				t.Errorf("Used() = %d, want %d", b.Used(), tc.fuel)
			}
			if tc.want == abi.CodeTimeout && b.Used() == 0 {
				t.Errorf("Used() = 0 after a timeout")
			}
		})
	}
}

// TestSleep_timeout checks that a timeout fires while the guest is
// blocked in poll_oneoff, with the module config's sleep from Nanosleep.
func TestSleep_timeout(t *testing.T) {
	r := newRuntime(t, nil)
	c := compile(t, r, instrument(t, goGuest(t, "sleep")))
	tests := []struct {
		name    string
		arg     string
		timeout time.Duration
		want    abi.Code
	}{
		{"sleep past deadline", "1h", 200 * time.Millisecond, abi.CodeTimeout},
		{"sleep within deadline", "1ms", time.Minute, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			b := &meter.Budget{}
			ctx = meter.WithBudget(ctx, b)
			cfg := wazero.NewModuleConfig().WithSysNanotime().WithSysWalltime().WithNanosleep(meter.Nanosleep(ctx))
			out, err := command(ctx, r, c, cfg, tc.arg)
			if tc.want == "" {
				if err != nil || out != "woke\n" {
					t.Fatalf("out %q, err %v", out, err)
				}
				return
			}
			if e := meter.ErrorOf(err); e == nil || e.Code != tc.want {
				t.Fatalf("ErrorOf(%v) = %v, want %s", err, e, tc.want)
			}
		})
	}
}

// TestNoBudget refuses to run a metered module without a budget rather
// than running it unlimited.
func TestNoBudget(t *testing.T) {
	r := newRuntime(t, nil)
	c := compile(t, r, instrument(t, readFile(t, "testdata/wat/loop.wasm")))
	_, err := call(context.Background(), r, c, "spin")
	if err == nil || !strings.Contains(err.Error(), "without a budget") {
		t.Fatalf("err = %v", err)
	}
	if meter.ErrorOf(err) != nil {
		t.Errorf("ErrorOf maps a missing budget to %v", meter.ErrorOf(err))
	}
}

func TestErrorOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"nil", nil},
		{"other", errors.New("boom")},
		{"exit", sys.NewExitError(3)},
		{"abi error not from the meter", abi.Errorf(abi.CodeTimeout, "x")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if e := meter.ErrorOf(tc.err); e != nil {
				t.Errorf("ErrorOf(%v) = %v, want nil", tc.err, e)
			}
		})
	}
}

// TestFeatures_sameOutputs runs every export of features.wasm (renumbered
// calls, tables, ref.func, multi-value, bulk memory...) instrumented and
// not, and compares results and function names.
func TestFeatures_sameOutputs(t *testing.T) {
	r := newRuntime(t, nil)
	orig := readFile(t, "testdata/wat/features.wasm")
	co := compile(t, r, orig)
	ci := compile(t, r, instrument(t, orig))
	calls := []struct {
		fn     string
		params []uint64
	}{
		{"dispatch", []uint64{0, 7, 3}}, {"dispatch", []uint64{1, 7, 3}}, {"dispatch", []uint64{2, 7, 3}},
		{"dispatch", []uint64{3, 7, 3}}, {"dispatch", []uint64{9, 7, 3}},
		{"multi", []uint64{5}}, {"multi", []uint64{200}},
		{"bulk", nil}, {"misc", []uint64{0}}, {"misc", []uint64{1}},
		{"countdown", []uint64{5}}, {"countdown", []uint64{0}},
	}
	for _, tc := range calls {
		t.Run(fmt.Sprint(tc.fn, tc.params), func(t *testing.T) {
			want, werr := call(context.Background(), r, co, tc.fn, tc.params...)
			b := &meter.Budget{}
			got, gerr := call(meter.WithBudget(context.Background(), b), r, ci, tc.fn, tc.params...)
			if werr != nil || gerr != nil {
				t.Fatalf("original err %v, instrumented err %v", werr, gerr)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("instrumented %v, original %v", got, want)
			}
			if b.Used() == 0 {
				t.Error("no fuel charged")
			}
		})
	}
	for name, def := range co.ExportedFunctions() {
		if got := ci.ExportedFunctions()[name].Name(); got != def.Name() {
			t.Errorf("export %s: name %q, want %q", name, got, def.Name())
		}
	}
}

// TestGo_sameOutputAndDeterministic runs the Go primes guest plain and
// instrumented, and checks that with DeterministicConfig two runs use the
// same fuel exactly, whatever the slice size.
func TestGo_sameOutputAndDeterministic(t *testing.T) {
	r := newRuntime(t, nil)
	orig := goGuest(t, "primes")
	co := compile(t, r, orig)
	ci := compile(t, r, instrument(t, orig))
	ctx := context.Background()
	want, err := command(ctx, r, co, nil, "20000", "map")
	if err != nil {
		t.Fatal(err)
	}
	var fuel []uint64
	for _, slice := range []uint64{0, 0, 12345} {
		b := &meter.Budget{Slice: slice}
		cfg := meter.DeterministicConfig(wazero.NewModuleConfig(), 7)
		got, err := command(meter.WithBudget(ctx, b), r, ci, cfg, "20000", "map")
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("instrumented output %q, original %q", got, want)
		}
		fuel = append(fuel, b.Used())
	}
	if fuel[0] == 0 || fuel[0] != fuel[1] || fuel[0] != fuel[2] {
		t.Errorf("fuel differs between deterministic runs: %v", fuel)
	}
	// The same fuel as a limit is enough; one unit less is not.
	for _, tc := range []struct {
		fuel uint64
		want *abi.Error
	}{{fuel[0], nil}, {fuel[0] - 1, abi.ErrFuelExhausted}} {
		b := &meter.Budget{Fuel: tc.fuel}
		_, err := command(meter.WithBudget(ctx, b), r, ci, meter.DeterministicConfig(wazero.NewModuleConfig(), 7), "20000", "map")
		if e := meter.ErrorOf(err); (tc.want == nil) != (e == nil) || (e != nil && !errors.Is(e, tc.want)) {
			t.Errorf("fuel %d: err %v, want %v", tc.fuel, err, tc.want)
		}
	}
}

// TestC_sameOutput runs the clang-built WASI command plain and
// instrumented.
func TestC_sameOutput(t *testing.T) {
	r := newRuntime(t, nil)
	orig := readFile(t, "testdata/c/primes.wasm")
	ctx := context.Background()
	want, err := command(ctx, r, compile(t, r, orig), nil, "20000")
	if err != nil {
		t.Fatal(err)
	}
	b := &meter.Budget{}
	got, err := command(meter.WithBudget(ctx, b), r, compile(t, r, instrument(t, orig)), nil, "20000")
	if err != nil {
		t.Fatal(err)
	}
	if got != want || want != "2262\n" {
		t.Errorf("instrumented %q, original %q", got, want)
	}
	if b.Used() == 0 {
		t.Error("no fuel charged")
	}
}

// TestInstrument_validates instruments every module at hand and compiles
// the result: the WAT fixtures, the C and Go guests and the Extism SDK's
// prebuilt plugins.
func TestInstrument_validates(t *testing.T) {
	paths, err := filepath.Glob("testdata/wat/*.wasm")
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, "testdata/c/primes.wasm")
	paths = append(paths, extismPlugins(t)...)
	mods := map[string][]byte{"go/primes": goGuest(t, "primes"), "go/sleep": goGuest(t, "sleep")}
	for _, p := range paths {
		mods[p] = readFile(t, p)
	}
	// The interpreter validates like the compiler, in a fraction of the time.
	r := newRuntime(t, wazero.NewRuntimeConfigInterpreter())
	for name, wasm := range mods {
		t.Run(name, func(t *testing.T) {
			if _, err := r.CompileModule(context.Background(), wasm); err != nil {
				t.Skipf("original does not compile: %v", err)
			}
			out := instrument(t, wasm)
			if _, err := r.CompileModule(context.Background(), out); err != nil {
				t.Fatalf("instrumented module does not compile: %v", err)
			}
			again := instrument(t, wasm)
			if string(again) != string(out) {
				t.Error("Instrument is not deterministic")
			}
		})
	}
}
