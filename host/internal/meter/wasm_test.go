package meter_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/internal/meter"
)

// Hand assembly of small modules for the adversarial and property tests.

func uleb(v uint64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func str(s string) []byte { return append(uleb(uint64(len(s))), s...) }

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func sec(id byte, payload ...[]byte) []byte {
	p := cat(payload...)
	return cat([]byte{id}, uleb(uint64(len(p))), p)
}

func module(sections ...[]byte) []byte {
	return cat([]byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}, cat(sections...))
}

// vec prefixes the concatenated items with their count.
func vec(items ...[]byte) []byte { return cat(uleb(uint64(len(items))), cat(items...)) }

// oneFunc is a module with one exported function "f" of type () -> ()
// with the given locals declaration and body (without the final end).
func oneFunc(locals []byte, body ...byte) []byte {
	code := cat(locals, body, []byte{0x0b})
	return module(
		sec(1, vec([]byte{0x60, 0, 0})),
		sec(3, vec([]byte{0})),
		sec(7, vec(cat(str("f"), []byte{0, 0}))),
		sec(10, vec(cat(uleb(uint64(len(code))), code))),
	)
}

var noLocals = []byte{0}

// TestInstrument_rejects feeds the pass malformed and hostile modules.
// Each must be refused with an error, never instrumented into something a
// guest could use to reach its own counter.
func TestInstrument_rejects(t *testing.T) {
	tests := []struct {
		name string
		wasm []byte
		want string
	}{
		{"not wasm", []byte("hello, world"), "not a WebAssembly"},
		{"truncated section", append(module(), 1, 10, 0), "section 1"},
		{"reserved import namespace", module(
			sec(1, vec([]byte{0x60, 1, 0x7e, 1, 0x7e})),
			sec(2, vec(cat(str("agenthost"), str("fuel_refill"), []byte{0, 0}))),
		), "reserved"},
		{"reserved export name", module(
			sec(6, vec([]byte{0x7e, 1, 0x42, 0, 0x0b})),
			sec(7, vec(cat(str(meter.CounterExport), []byte{3, 0}))),
		), "reserved"},
		{"export of the counter's global index", module(
			sec(7, vec(cat(str("g"), []byte{3, 0}))),
		), "global index 0 out of range"},
		{"global index of the counter", oneFunc(noLocals, 0x42, 0, 0x24, 0), "global index 0 out of range"},
		{"local index of the counter local", oneFunc(noLocals, 0x42, 5, 0x21, 0), "local index 0 out of range"},
		{"call out of range", oneFunc(noLocals, 0x10, 1), "function index 1 out of range"},
		{"branch out of range", oneFunc(noLocals, 0x0c, 1), "branch depth"},
		{"exceptions", oneFunc(noLocals, 0x06, 0x40, 0x0b), "exception handling"},
		{"unknown opcode", oneFunc(noLocals, 0xc5), "unknown opcode"},
		{"unknown prefixed opcode", oneFunc(noLocals, 0xfc, 99), "unknown opcode"},
		{"else outside if", oneFunc(noLocals, 0x05), "else outside if"},
		{"body without end", module(
			sec(1, vec([]byte{0x60, 0, 0})),
			sec(3, vec([]byte{0})),
			sec(10, vec([]byte{2, 0, 0x01})),
		), "without end"},
		{"bytes after end", module(
			sec(1, vec([]byte{0x60, 0, 0})),
			sec(3, vec([]byte{0})),
			sec(10, vec([]byte{3, 0, 0x0b, 0x01})),
		), "after the end"},
		{"too many locals", oneFunc(cat([]byte{3}, uleb(1<<26), []byte{0x7f}, uleb(1<<26), []byte{0x7f}, []byte{1, 0x7f})), "too many locals"},
		{"trailing bytes in a section", module(sec(1, vec(), []byte{0x30})), "bytes after the last entry"},
		{"trailing bytes in the code section", module(
			sec(1, vec([]byte{0x60, 0, 0})),
			sec(3, vec([]byte{0})),
			sec(10, vec([]byte{2, 0, 0x0b}), []byte{0x30}),
		), "bytes after the last entry"},
		{"sections out of order", module(sec(3, vec()), sec(1, vec())), "out of order"},
		{"repeated section", module(sec(1, vec()), sec(1, vec())), "out of order"},
		{"unknown section", module(sec(13, nil)), "unknown section"},
		{"bodies without functions", module(sec(10, vec([]byte{2, 0, 0x0b}))), "bodies"},
		{"leb overflow", oneFunc(noLocals, 0x10, 0xff, 0xff, 0xff, 0xff, 0x7f), "overflows"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := meter.Instrument(tc.wasm)
			if err == nil {
				t.Fatalf("instrumented into %d bytes, want an error", len(out))
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "instrument: ") {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestInstrument_minimal instruments modules with sections missing, which
// the pass must create.
func TestInstrument_minimal(t *testing.T) {
	tests := []struct {
		name string
		wasm []byte
	}{
		{"empty module", module()},
		{"one empty function", oneFunc(noLocals)},
		{"custom section only", module(sec(0, str("note"), []byte("hello")))},
	}
	r := newRuntime(t, nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := compile(t, r, instrument(t, tc.wasm))
			if _, ok := c.ExportedFunctions()[meter.SettleExport]; !ok {
				t.Error("no settle export")
			}
		})
	}
}

// progGen generates random structured programs over i32 locals: nested
// blocks, bounded loops, if/else, br_if, br_table, early returns, calls
// to a helper and to an import. Every program terminates.
type progGen struct {
	rng   *rand.Rand
	depth int
	loops int
}

const (
	genScratch = 4 // locals 1..4 (local 0 is the parameter)
	genLoopLoc = 5 // locals 5.. are loop counters, one per nesting level
	genMaxLoop = 3
)

func (g *progGen) local() byte { return byte(g.rng.IntN(genScratch + 1)) }

func (g *progGen) stmts(n int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		b = append(b, g.stmt()...)
	}
	return b
}

func (g *progGen) stmt() []byte {
	if g.depth >= 4 {
		return g.arith()
	}
	g.depth++
	defer func() { g.depth-- }()
	switch g.rng.IntN(11) {
	case 0: // block with a conditional exit
		return cat([]byte{0x02, 0x40}, g.stmts(2), []byte{0x20, g.local(), 0x0d, 0}, g.stmts(2), []byte{0x0b})
	case 1: // if / else
		return cat([]byte{0x20, g.local(), 0x41, 1, 0x71, 0x04, 0x40}, g.stmts(2), []byte{0x05}, g.stmts(2), []byte{0x0b})
	case 2: // if without else
		return cat([]byte{0x20, g.local(), 0x41, 2, 0x71, 0x04, 0x40}, g.stmts(2), []byte{0x0b})
	case 3: // bounded loop
		if g.loops >= genMaxLoop {
			return g.arith()
		}
		k := byte(genLoopLoc + g.loops)
		g.loops++
		defer func() { g.loops-- }()
		n := byte(1 + g.rng.IntN(5))
		return cat([]byte{0x41, n, 0x21, k, 0x03, 0x40}, g.stmts(2),
			[]byte{0x20, k, 0x41, 1, 0x6b, 0x22, k, 0x0d, 0, 0x0b})
	case 4: // br_table over two nested blocks
		return cat([]byte{0x02, 0x40, 0x02, 0x40, 0x20, g.local(), 0x41, 3, 0x70, 0x0e, 2, 0, 1, 0, 0x0b},
			g.stmts(1), []byte{0x0b})
	case 5: // early return
		return []byte{0x20, g.local(), 0x41, 7, 0x70, 0x45, 0x04, 0x40, 0x20, g.local(), 0x0f, 0x0b}
	case 6: // call the helper (function 2)
		return []byte{0x20, g.local(), 0x10, 2, 0x21, g.local()}
	case 7: // call the import
		return []byte{0x20, g.local(), 0x10, 0}
	case 8: // Go's dispatch stubs: if cond { work; br out } chains in a block
		return cat([]byte{0x02, 0x40},
			[]byte{0x20, g.local(), 0x41, 1, 0x71, 0x04, 0x40}, g.arith(), []byte{0x0c, 1, 0x0b},
			g.arith(),
			[]byte{0x20, g.local(), 0x41, 2, 0x71, 0x04, 0x40}, g.stmts(1), []byte{0x0c, 1, 0x0b},
			g.stmts(1), []byte{0x0b})
	case 9: // a stub with a call before the if, which stops the folding
		return cat([]byte{0x02, 0x40, 0x20, g.local(), 0x10, 2, 0x21, g.local()},
			[]byte{0x20, g.local(), 0x41, 4, 0x71, 0x04, 0x40, 0x0c, 1, 0x0b}, g.stmts(1), []byte{0x0b})
	default:
		return g.arith()
	}
}

func (g *progGen) arith() []byte {
	ops := []byte{0x6a, 0x6b, 0x6c, 0x73, 0x71, 0x72} // add sub mul xor and or
	return []byte{0x20, g.local(), 0x41, byte(g.rng.IntN(64)), ops[g.rng.IntN(len(ops))], 0x21, g.local()}
}

// program returns a module importing env.log, exporting "f" (i32) -> i32
// built from random statements, with a helper (i32) -> i32.
func (g *progGen) program() []byte {
	locals := []byte{1, genScratch + genMaxLoop, 0x7f}
	body := cat(locals, g.stmts(6), []byte{0x20, 1, 0x20, 2, 0x73, 0x20, 3, 0x73, 0x20, 4, 0x73, 0x0b})
	helper := cat([]byte{0}, []byte{0x20, 0, 0x41, 3, 0x6c, 0x41, 1, 0x6a, 0x0b})
	return module(
		sec(1, vec([]byte{0x60, 1, 0x7f, 1, 0x7f}, []byte{0x60, 1, 0x7f, 0})),
		sec(2, vec(cat(str("env"), str("log"), []byte{0, 1}))),
		sec(3, vec([]byte{0}, []byte{0})),
		sec(7, vec(cat(str("f"), []byte{0, 1}))),
		sec(10, vec(cat(uleb(uint64(len(body))), body), cat(uleb(uint64(len(helper))), helper))),
	)
}

// TestInstrument_generated is a property test over random programs: the
// instrumented module returns what the original returns, its fuel does
// not depend on the slice size, and that fuel is exactly the limit that
// lets the call finish.
func TestInstrument_generated(t *testing.T) {
	r := newRuntime(t, nil)
	ctx := context.Background()
	for seed := uint64(0); seed < 150; seed++ {
		g := &progGen{rng: rand.New(rand.NewPCG(seed, 1))}
		orig := g.program()
		co, err := r.CompileModule(ctx, orig)
		if err != nil {
			t.Fatalf("seed %d: generated an invalid module: %v", seed, err)
		}
		ci := compile(t, r, instrument(t, orig))
		for _, x := range []uint64{0, 5, 12345} {
			want, err := call(ctx, r, co, "f", x)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			var used []uint64
			for _, slice := range []uint64{1, 3, 17, 0} {
				b := &meter.Budget{Slice: slice}
				got, err := call(meter.WithBudget(ctx, b), r, ci, "f", x)
				if err != nil {
					t.Fatalf("seed %d x %d slice %d: %v", seed, x, slice, err)
				}
				if got[0] != want[0] {
					t.Fatalf("seed %d x %d: instrumented %d, original %d", seed, x, got[0], want[0])
				}
				used = append(used, b.Used())
			}
			for _, u := range used[1:] {
				if u != used[0] {
					t.Fatalf("seed %d x %d: fuel depends on the slice: %v", seed, x, used)
				}
			}
			for _, tc := range []struct {
				fuel uint64
				ok   bool
			}{{used[0], true}, {used[0] - 1, false}} {
				b := &meter.Budget{Fuel: tc.fuel, Slice: 5}
				_, err := call(meter.WithBudget(ctx, b), r, ci, "f", x)
				if ok := err == nil; ok != tc.ok {
					t.Fatalf("seed %d x %d: fuel %d (used %d): err %v", seed, x, tc.fuel, used[0], err)
				}
				if !tc.ok && (meter.ErrorOf(err) == nil || meter.ErrorOf(err).Code != "FUEL_EXHAUSTED") {
					t.Fatalf("seed %d: err %v, want FUEL_EXHAUSTED", seed, err)
				}
			}
		}
	}
}
