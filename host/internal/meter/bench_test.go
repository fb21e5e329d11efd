package meter_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/cputime"
	"github.com/agenthost/agenthost/host/internal/meter"
	"github.com/tetratelabs/wazero"
)

// The interruption benchmarks run each guest four ways:
//
//	unlimited           the original module, nothing can stop a loop
//	timeout             instrumented, a Budget without fuel, a deadline
//	fuel                instrumented, a Budget with fuel, a deadline
//	closeOnContextDone  the original module on a runtime with
//	                    WithCloseOnContextDone(true) and a deadline
//
// Run them with -benchtime=1x -count=5 (one op is a whole guest run) and
// compare medians. Besides wall time they report cpu-ns/op, the process's
// CPU time per run, which other processes on a shared machine disturb
// far less.

const benchTimeout = 10 * time.Minute

type benchGuest struct {
	wasm func(testing.TB) []byte
	run  func(ctx context.Context, r wazero.Runtime, c wazero.CompiledModule) error
}

// interruptCase is one way of running a guest.
type interruptCase struct {
	name   string
	r      wazero.Runtime
	wasm   []byte
	budget func() *meter.Budget
}

func benchInterruption(b *testing.B, g benchGuest) {
	orig := g.wasm(b)
	metered := instrument(b, orig)
	plain := newRuntime(b, nil)
	closing := newRuntime(b, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
	cases := []interruptCase{
		{"unlimited", plain, orig, nil},
		{"timeout", plain, metered, func() *meter.Budget { return &meter.Budget{} }},
		{"fuel", plain, metered, func() *meter.Budget { return &meter.Budget{Fuel: 1 << 50} }},
		{"closeOnContextDone", closing, orig, nil},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			c := compile(b, tc.r, tc.wasm)
			b.ResetTimer()
			var fuel uint64
			cpu0 := int64(cputime.Process())
			for b.Loop() {
				fuel = runCase(b, g, tc, c)
			}
			b.ReportMetric(float64(int64(cputime.Process())-cpu0)/float64(b.N), "cpu-ns/op")
			if tc.name == "fuel" {
				b.ReportMetric(float64(fuel), "fuel/op")
			}
		})
	}
	// The target ratios, measured on a shared machine: each op runs
	// the unlimited, timeout and fuel cases once, back to back, so that
	// load from other processes falls on all of them alike, and reports
	// each case's CPU time (of the thread running the guest, so garbage
	// collection elsewhere is left out) and its ratio to the unlimited
	// run of the same op. closeOnContextDone, ten times slower, is left
	// to its own sub-benchmark.
	b.Run("interleaved", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cases := cases[:3]
		compiled := make([]wazero.CompiledModule, len(cases))
		for i, tc := range cases {
			compiled[i] = compile(b, tc.r, tc.wasm)
		}
		b.ResetTimer()
		sums := make([]float64, len(cases))
		ratios := make([]float64, len(cases))
		for b.Loop() {
			var base float64
			for i, tc := range cases {
				cpu0 := int64(cputime.Thread())
				runCase(b, g, tc, compiled[i])
				d := float64(int64(cputime.Thread()) - cpu0)
				if i == 0 {
					base = d
				}
				sums[i] += d
				ratios[i] += d / base
			}
		}
		for i, tc := range cases {
			b.ReportMetric(sums[i]/float64(b.N)/1e6, tc.name+"-cpu-ms")
			if i > 0 {
				b.ReportMetric(ratios[i]/float64(b.N), tc.name+"-x")
			}
		}
	})
}

// runCase runs the guest once as tc says and returns the fuel used (0
// when not metered).
func runCase(b *testing.B, g benchGuest, tc interruptCase, c wazero.CompiledModule) uint64 {
	ctx := context.Background()
	if tc.name != "unlimited" {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, benchTimeout)
		defer cancel()
	}
	var bud *meter.Budget
	if tc.budget != nil {
		bud = tc.budget()
		ctx = meter.WithBudget(ctx, bud)
	}
	if err := g.run(ctx, tc.r, c); err != nil {
		b.Fatal(err)
	}
	if bud == nil {
		return 0
	}
	return bud.Used()
}

func commandRun(want string, args ...string) func(context.Context, wazero.Runtime, wazero.CompiledModule) error {
	return func(ctx context.Context, r wazero.Runtime, c wazero.CompiledModule) error {
		out, err := command(ctx, r, c, nil, args...)
		if err == nil && out != want {
			return &unexpected{got: out, want: want}
		}
		return err
	}
}

type unexpected struct{ got, want string }

func (u *unexpected) Error() string { return "output " + u.got + ", want " + u.want }

// BenchmarkGoPrimes is the interruption target: a Go wasip1 guest
// counting the primes below 3,000,000 by trial division.
func BenchmarkGoPrimes(b *testing.B) {
	benchInterruption(b, benchGuest{
		wasm: func(tb testing.TB) []byte { return goGuest(tb, "primes") },
		run:  commandRun("216816\n", "3000000"),
	})
}

// BenchmarkCPrimes is the same computation compiled from C by clang.
func BenchmarkCPrimes(b *testing.B) {
	benchInterruption(b, benchGuest{
		wasm: func(tb testing.TB) []byte { return readFile(tb, "testdata/c/primes.wasm") },
		run:  commandRun("216816\n", "3000000"),
	})
}

// BenchmarkWATSum is a hand-written tight loop with no calls: the worst
// case for per-segment metering (17 instructions per iteration, two
// segments, one of them a loop header).
func BenchmarkWATSum(b *testing.B) {
	benchInterruption(b, benchGuest{
		wasm: func(tb testing.TB) []byte { return readFile(tb, "testdata/wat/sum.wasm") },
		run: func(ctx context.Context, r wazero.Runtime, c wazero.CompiledModule) error {
			res, err := call(ctx, r, c, "sum", 100_000_000)
			if err == nil && res[0] != 199999997 {
				return &unexpected{got: strconv.FormatUint(res[0], 10), want: "199999997"}
			}
			return err
		},
	})
}

// BenchmarkInstrument measures the rewrite of the Go primes guest (about
// 2 MB).
func BenchmarkInstrument(b *testing.B) {
	wasm := goGuest(b, "primes")
	b.SetBytes(int64(len(wasm)))
	for b.Loop() {
		if _, err := meter.Instrument(wasm); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCache compares a cold rewrite with what a second process pays:
// a fresh Cache over the same folder, which reads the stored module
// instead of rewriting it.
func BenchmarkCache(b *testing.B) {
	wasm := goGuest(b, "primes")
	dir := b.TempDir()
	if _, err := meter.NewCache(dir, nil).Instrument(wasm); err != nil {
		b.Fatal(err)
	}
	b.Run("miss", func(b *testing.B) {
		for b.Loop() {
			if _, err := meter.NewCache("", nil).Instrument(wasm); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("diskHit", func(b *testing.B) {
		for b.Loop() {
			if _, err := meter.NewCache(dir, nil).Instrument(wasm); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("memoryHit", func(b *testing.B) {
		c := meter.NewCache(dir, nil)
		for b.Loop() {
			if _, err := c.Instrument(wasm); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCompile compares wazero's compilation of the Go primes guest
// before and after instrumentation (the metered module is larger).
func BenchmarkCompile(b *testing.B) {
	orig := goGuest(b, "primes")
	mods := []struct {
		name string
		wasm []byte
	}{{"original", orig}, {"instrumented", instrument(b, orig)}}
	for _, m := range mods {
		b.Run(m.name, func(b *testing.B) {
			r := newRuntime(b, nil)
			b.ReportMetric(float64(len(m.wasm)), "bytes")
			cpu0 := int64(cputime.Process())
			for b.Loop() {
				c, err := r.CompileModule(context.Background(), m.wasm)
				if err != nil {
					b.Fatal(err)
				}
				_ = c.Close(context.Background())
			}
			b.ReportMetric(float64(int64(cputime.Process())-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
