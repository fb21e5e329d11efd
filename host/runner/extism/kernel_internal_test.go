package extism

import (
	"errors"
	"testing"
)

// trap runs f and returns what it panicked with.
func trap(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

func TestKernel(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, k *kernel)
	}{
		{"alloc 0 is the null offset", func(t *testing.T, k *kernel) {
			if off := k.alloc(0); off != 0 {
				t.Fatalf("alloc(0) = %d", off)
			}
		}},
		{"blocks do not overlap and keep their length", func(t *testing.T, k *kernel) {
			a, b := k.alloc(3), k.alloc(9)
			if a == 0 || b < a+3 || k.length(a) != 3 || k.length(b) != 9 {
				t.Fatalf("a=%d b=%d len %d %d", a, b, k.length(a), k.length(b))
			}
		}},
		{"store and load", func(t *testing.T, k *kernel) {
			a := k.alloc(16)
			k.storeU64(a+8, 0x0102030405060708)
			k.storeU8(a, 7)
			if k.loadU64(a+8) != 0x0102030405060708 || k.loadU8(a) != 7 || k.loadU8(a+8) != 8 {
				t.Fatal("round trip failed")
			}
		}},
		{"an 8-byte load at a block's tail stays in its padding", func(t *testing.T, k *kernel) {
			a := k.alloc(3)
			k.storeU8(a+2, 9)
			if v := k.loadU64(a); v != 9<<16 {
				t.Fatalf("loadU64 = %#x", v)
			}
		}},
		{"access outside every block traps", func(t *testing.T, k *kernel) {
			a := k.alloc(8)
			if trap(func() { k.loadU8(a + 64) }) == nil || trap(func() { k.loadU8(1) }) == nil || trap(func() { k.storeU64(a+4, 1) }) == nil {
				t.Fatal("no trap")
			}
		}},
		{"free, length 0, first-fit reuse", func(t *testing.T, k *kernel) {
			a, b := k.alloc(32), k.alloc(8)
			k.storeU8(a, 5)
			k.free(a)
			if k.length(a) != 0 {
				t.Fatal("freed block has a length")
			}
			c := k.alloc(16)
			if c != a || k.loadU8(c) != 0 {
				t.Fatalf("alloc after free = %d (want %d, zeroed)", c, a)
			}
			_ = b
		}},
		{"freeing the last block gives its range back", func(t *testing.T, k *kernel) {
			k.alloc(8)
			b := k.alloc(8)
			next := k.next
			k.free(b)
			if k.next >= next || k.alloc(8) != b {
				t.Fatalf("next %d -> %d", next, k.next)
			}
		}},
		{"double free and unknown offsets are ignored", func(t *testing.T, k *kernel) {
			a := k.alloc(8)
			k.free(a)
			k.free(a)
			k.free(12345)
			k.free(0)
			if k.live != 0 {
				t.Fatalf("live = %d", k.live)
			}
		}},
		{"input", func(t *testing.T, k *kernel) {
			k.setInput([]byte("hello world"))
			if k.inputU8(4) != 'o' || k.inputU64(0) != 0x6f77206f6c6c6568 || k.length(k.inputOff) != 11 {
				t.Fatal("input reads")
			}
			if trap(func() { k.inputU8(11) }) == nil || trap(func() { k.inputU64(16) }) == nil {
				t.Fatal("read past the input did not trap")
			}
		}},
		{"budget refusal traps with errKernelMemory", func(t *testing.T, k *kernel) {
			k.budget = func(live, n uint64) bool { return live+n <= 64 }
			k.alloc(64)
			var e errKernelMemory
			if v := trap(func() { k.alloc(1) }); v == nil || !errors.As(v.(error), &e) {
				t.Fatalf("trap = %v", v)
			}
		}},
		{"error message and output", func(t *testing.T, k *kernel) {
			m := k.write([]byte("boom"))
			k.errOff = m
			o := k.write([]byte("out"))
			k.outOff, k.outLen = o, 3
			if k.errorMessage() != "boom" || string(k.output()) != "out" {
				t.Fatalf("%q %q", k.errorMessage(), k.output())
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := &kernel{}
			k.reset()
			tc.run(t, k)
		})
	}
}

func BenchmarkKernelLoadU64(b *testing.B) {
	k := &kernel{}
	k.reset()
	offs := make([]uint64, 16)
	for i := range offs {
		offs[i] = k.alloc(256)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := offs[i%16]
		for j := uint64(0); j < 256; j += 8 {
			k.loadU64(off + j)
		}
	}
}
