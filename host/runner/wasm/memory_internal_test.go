package wasm

import "testing"

func TestMemoryCap(t *testing.T) {
	stopped := 0
	m := &memoryCap{limit: 4 << 16, tooSmall: func() { stopped++ }}
	lm := m.Allocate(0, 1<<32)
	buf := lm.Reallocate(1 << 16)
	if len(buf) != 1<<16 {
		t.Fatalf("initial len %d", len(buf))
	}
	buf[10] = 7
	if buf = lm.Reallocate(3 << 16); len(buf) != 3<<16 || buf[10] != 7 {
		t.Fatalf("grow lost content or length: len %d", len(buf))
	}
	for i := 1 << 16; i < len(buf); i++ {
		if buf[i] != 0 {
			t.Fatalf("grown memory not zero at %d", i)
		}
	}
	if got := lm.Reallocate(5 << 16); got != nil {
		t.Fatal("grow past the cap succeeded")
	}
	size, reached, asked := m.state()
	if size != 3<<16 || !reached || asked != 5<<16 || stopped != 0 {
		t.Fatalf("state %d %v %d, stopped %d", size, reached, asked, stopped)
	}
	if buf = lm.Reallocate(4 << 16); len(buf) != 4<<16 {
		t.Fatal("grow up to the cap after a refusal failed")
	}
	lm.Free()
}

func TestMemoryCap_initialOverCap(t *testing.T) {
	stopped := 0
	m := &memoryCap{limit: 1 << 16, tooSmall: func() { stopped++ }}
	if buf := m.Allocate(0, 0).Reallocate(2 << 16); len(buf) != 2<<16 {
		t.Fatal("initial allocation refused: wazero would panic")
	}
	if _, reached, _ := m.state(); !reached || stopped != 1 {
		t.Fatalf("reached %v stopped %d", reached, stopped)
	}
}
