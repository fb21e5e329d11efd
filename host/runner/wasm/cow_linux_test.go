package wasm

import (
	"bytes"
	"testing"
)

// TestCOWImage_written checks that pagemap reports every page written
// through a private mapping and that the restore it guides leaves the
// mapping equal to the snapshot, also after several rounds.
func TestCOWImage_written(t *testing.T) {
	snap := testSnapshot(16)
	im, err := newCOWImage(snap)
	if err != nil {
		t.Fatal(err)
	}
	defer im.close()
	b, err := im.mapping()
	if err != nil {
		t.Fatal(err)
	}
	defer im.unmap(b)
	var scratch []byte
	var sink byte
	for round, pages := range [][]int{{0, 5}, {5, 15}, {2}, {}} {
		for _, p := range pages {
			b[p*pageSize+round]++
		}
		sink += b[9*pageSize] // a read: the page stays the memfd's
		var maybe func(int) bool
		scratch, maybe = im.written(b, scratch)
		for _, p := range pages {
			if !maybe(p) {
				t.Fatalf("round %d: page %d written but not reported", round, p)
			}
		}
		if im.pagemap >= 0 && maybe(9) {
			t.Errorf("round %d: page 9 only read but reported written", round)
		}
		if n, _ := restoreDirty(b, snap, maybe); n != len(pages) {
			t.Errorf("round %d: restored %d pages, want %d", round, n, len(pages))
		}
		if !bytes.Equal(b, snap) {
			t.Fatalf("round %d: mapping differs from the snapshot after the restore", round)
		}
	}
	_ = sink
}
