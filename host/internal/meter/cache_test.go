package meter_test

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/host/internal/meter"
)

// TestCache checks the three paths of Cache.Instrument: computed, read
// back from disk by a new Cache (a second process), and recomputed when
// the stored file is not a module.
func TestCache(t *testing.T) {
	wasm := readFile(t, "testdata/wat/features.wasm")
	want := instrument(t, wasm)
	dir := t.TempDir()
	path := filepath.Join(dir, "meter-"+meter.Key(wasm)+".wasm")

	tests := []struct {
		name  string
		setup func(t *testing.T)
		dir   string
	}{
		{"memory only", func(*testing.T) {}, ""},
		{"computed and stored", func(*testing.T) {}, dir},
		{"read from disk", func(t *testing.T) {
			// Replace the stored module by a marked copy with a matching
			// header: a hit returns it.
			if err := os.WriteFile(path, fileOf(meter.Key(wasm), append(bytes.Clone(want), 0, 4, 'h', 'i', 't', '!')), 0o600); err != nil {
				t.Fatal(err)
			}
		}, dir},
		{"torn file recomputed", func(t *testing.T) {
			if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, dir},
		{"planted bare module recomputed", func(t *testing.T) {
			// A module dropped in the cache without the header is never
			// run (it ran despite the manifest's pin).
			if err := os.WriteFile(path, append(bytes.Clone(want), 0, 4, 'h', 'i', 't', '!'), 0o600); err != nil {
				t.Fatal(err)
			}
		}, dir},
		{"another module's file recomputed", func(t *testing.T) {
			// A whole, valid file of another module under this one's
			// name: its header names the other key, so it is not run.
			other := readFile(t, "testdata/wat/loop.wasm")
			if err := os.WriteFile(path, fileOf(meter.Key(other), instrument(t, other)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, dir},
		{"edited content recomputed", func(t *testing.T) {
			f := fileOf(meter.Key(wasm), want)
			f[len(f)-1] ^= 0xff
			if err := os.WriteFile(path, f, 0o600); err != nil {
				t.Fatal(err)
			}
		}, dir},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup(t)
			c := meter.NewCache(tc.dir, nil)
			got, err := c.Instrument(wasm)
			if err != nil {
				t.Fatal(err)
			}
			again, err := c.Instrument(wasm)
			if err != nil || !bytes.Equal(again, got) {
				t.Fatalf("second call: %v, equal %v", err, bytes.Equal(again, got))
			}
			hit := bytes.HasSuffix(got, []byte("hit!"))
			if wantHit := tc.name == "read from disk"; hit != wantHit {
				t.Fatalf("disk hit = %v, want %v", hit, wantHit)
			}
			if !hit && !bytes.Equal(got, want) {
				t.Fatal("cached module differs from Instrument's")
			}
			if tc.dir != "" {
				stored, err := os.ReadFile(path)
				if err != nil || !bytes.Equal(stored, fileOf(meter.Key(wasm), got)) {
					t.Fatalf("stored file: %v, equal %v", err, bytes.Equal(stored, got))
				}
			}
		})
	}
	if meter.Key(wasm) == meter.Key(append(bytes.Clone(wasm), 0)) {
		t.Error("Key ignores the module bytes")
	}
}

// TestCache_error returns Instrument's error for a bad module and caches
// nothing.
func TestCache_error(t *testing.T) {
	dir := t.TempDir()
	if _, err := meter.NewCache(dir, nil).Instrument([]byte("not wasm")); err == nil {
		t.Fatal("no error")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("stored %d files for a bad module", len(entries))
	}
}

// fileOf is the cache's file format: a magic line, a line naming the
// key, the SHA-256 of the module, the module.
func fileOf(key string, wasm []byte) []byte {
	sum := sha256.Sum256(wasm)
	return append(append([]byte("agenthost-meter-file-v1\nkey "+key+"\n"), sum[:]...), wasm...)
}
