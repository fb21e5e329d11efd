package wasm_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGuestsUpToDate reassembles every WAT guest and compares it with the
// committed module, so a .wat edit without `make -C testdata/guests` is
// caught. It needs wabt's wat2wasm.
func TestGuestsUpToDate(t *testing.T) {
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm not installed (apt-get install wabt)")
	}
	sources, err := filepath.Glob(filepath.Join(guestsDir, "*", "*.wat"))
	if err != nil || len(sources) == 0 {
		t.Fatalf("no WAT guests: %v", err)
	}
	for _, src := range sources {
		t.Run(filepath.Base(src), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "m.wasm")
			if b, err := exec.Command(wat2wasm, "-o", out, src).CombinedOutput(); err != nil {
				t.Fatalf("wat2wasm: %v\n%s", err, b)
			}
			want, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(src[:len(src)-len(".wat")] + ".wasm")
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("committed module is stale (run make -C testdata/guests): %v", err)
			}
		})
	}
}
