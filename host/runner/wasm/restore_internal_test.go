package wasm

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// testSnapshot is a snapshot-like image: pages of random bytes.
func testSnapshot(pages int) []byte {
	snap := make([]byte, pages*pageSize)
	rng := rand.New(rand.NewChaCha8([32]byte{1}))
	for i := range snap {
		snap[i] = byte(rng.Uint32())
	}
	return snap
}

func TestRestoreDirty(t *testing.T) {
	snap := testSnapshot(8)
	tests := []struct {
		name  string
		write func(mem []byte)
		pages int
	}{
		{name: "untouched", write: func([]byte) {}, pages: 0},
		{name: "one byte", write: func(m []byte) { m[3*pageSize+17]++ }, pages: 1},
		{name: "first and last byte", write: func(m []byte) { m[0]++; m[len(m)-1]++ }, pages: 2},
		{name: "written back unchanged", write: func(m []byte) { copy(m[pageSize:], snap[pageSize:2*pageSize]) }, pages: 0},
		{name: "a line boundary", write: func(m []byte) { m[5*pageSize+cacheLine-1]++; m[5*pageSize+cacheLine]++ }, pages: 1},
		{name: "one byte in each word of a line", write: func(m []byte) {
			for w := range cacheLine / 8 {
				m[6*pageSize+2*cacheLine+8*w+w]++
			}
		}, pages: 1},
		{name: "everything", write: func(m []byte) { clear(m) }, pages: 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := append([]byte(nil), snap...)
			tc.write(mem)
			if n, _ := restoreDirty(mem, snap, everyPage); n != tc.pages {
				t.Errorf("restored %d pages, want %d", n, tc.pages)
			}
			if !bytes.Equal(mem, snap) {
				t.Fatal("memory differs from the snapshot after the restore")
			}
		})
	}
}
