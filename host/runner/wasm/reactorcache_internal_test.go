package wasm

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestReactorCache: a rewrite stored by one cache is read back by
// another (a second process) equal to rewriteReactor's, without
// instrumenting the module again; a damaged file is discarded and the
// rewrite computed again.
func TestReactorCache(t *testing.T) {
	code, err := os.ReadFile(filepath.Join("..", "..", "..", "toolpacks", "core", "echo.wasm"))
	if err != nil {
		t.Skipf("toolpacks not built: %v", err)
	}
	want, err := rewriteReactor(code)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var discarded []string
	onDiscard := func(_, reason string) { discarded = append(discarded, reason) }
	sum := fmt.Sprintf("%x", sha256.Sum256(code))
	built := 0
	instrumented := func() ([]byte, error) { built++; return code, nil }
	first, err := newReactorCache(dir, nil, onDiscard).rewrite(sum, instrumented)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "reactor-*.bin"))
	if len(files) != 1 {
		t.Fatalf("stored %d files", len(files))
	}
	for _, damage := range []func(){
		func() {},
		func() {
			b, _ := os.ReadFile(files[0])
			b[len(b)/2] ^= 1
			_ = os.WriteFile(files[0], b, 0o600)
		},
	} {
		damage()
		got, err := newReactorCache(dir, nil, onDiscard).rewrite(sum, instrumented)
		if err != nil {
			t.Fatal(err)
		}
		for _, rm := range []*reactorModule{first, got} {
			if !bytes.Equal(rm.code, want.code) || !bytes.Equal(rm.initial, want.initial) || rm.initialSize != want.initialSize ||
				!reflect.DeepEqual(rm.globals, want.globals) || rm.counter != want.counter || rm.reusable != want.reusable {
				t.Fatal("a cached rewrite differs from rewriteReactor's")
			}
		}
		if got.digest != first.digest {
			t.Fatal("digest differs")
		}
	}
	if len(discarded) != 1 {
		t.Fatalf("discarded %q, want the damaged file once", discarded)
	}
	if built != 2 {
		t.Fatalf("the module was instrumented %d times, want 2 (the first rewrite and the damaged file's)", built)
	}
}
