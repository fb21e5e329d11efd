package filecache_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/agenthost/agenthost/host/internal/filecache"
)

// guest reads a committed test module.
func guest(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "guests", name, name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCompiled: wazero writes a module's compiled code where Path says
// (the derivation of its name, restated, still holds); another module's
// compiled file planted under that name, or a file without a seal, is
// removed and reported once before wazero reads it, and the file wazero
// writes again is sealed and trusted from then on.
func TestCompiled(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("wazero compiles (and stores compiled files) on amd64 and arm64 only")
	}
	echo, exit3 := guest(t, "echo"), guest(t, "exit3")
	dir := t.TempDir()
	ctx := context.Background()
	var discarded []string
	c, err := filecache.NewCompiled(dir, nil, func(_, reason string) { discarded = append(discarded, reason) }, func(path string) {
		t.Errorf("compiled file not found at %s", path)
	})
	if err != nil {
		t.Fatal(err)
	}
	// compile compiles code in a new runtime on the cache folder, as a
	// new process would, guarded by c.
	compile := func(code []byte) {
		t.Helper()
		cache, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCompilationCache(cache))
		defer rt.Close(ctx)
		if err := c.Guard(code, func() error { _, err := rt.CompileModule(ctx, code); return err }); err != nil {
			t.Fatal(err)
		}
	}
	read := func(t *testing.T, path string) []byte {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return b
	}
	compile(echo)
	compile(exit3)
	echoCode := read(t, c.Path(echo))
	if len(discarded) != 0 {
		t.Fatalf("fresh files discarded: %q", discarded)
	}

	tests := []struct {
		name  string
		plant func(t *testing.T)
	}{
		{"another module's compiled code", func(t *testing.T) {
			if err := os.WriteFile(c.Path(echo), read(t, c.Path(exit3)), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"renamed over", func(t *testing.T) {
			compile(exit3) // the file renamed away comes back, sealed
			if err := os.Rename(c.Path(exit3), c.Path(echo)); err != nil {
				t.Fatal(err)
			}
		}},
		{"unsealed", func(t *testing.T) {
			if err := os.RemoveAll(filepath.Join(filepath.Dir(c.Path(echo)), "seal")); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			discarded = nil
			tc.plant(t)
			compile(echo)
			if len(discarded) != 1 {
				t.Fatalf("discarded %q, want one report", discarded)
			}
			if got := read(t, c.Path(echo)); string(got) != string(echoCode) {
				t.Fatal("the compiled file is not echo's own again")
			}
			discarded = nil
			compile(echo)
			if len(discarded) != 0 {
				t.Fatalf("the recompiled file was discarded: %q", discarded)
			}
		})
	}
	// A file that fails its check but cannot be removed (here: its
	// owner has closed the cache) is never read: the compilation does
	// not start.
	t.Run("not removable", func(t *testing.T) {
		gate := &filecache.Gate{}
		closed, err := filecache.NewCompiled(dir, gate, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c.Path(echo), []byte("not echo's compiled code"), 0o600); err != nil {
			t.Fatal(err)
		}
		gate.Close()
		ran := false
		if err := closed.Guard(echo, func() error { ran = true; return nil }); err == nil || ran {
			t.Fatalf("Guard = %v, compiled %v: want an error and no compilation", err, ran)
		}
	})
	var none *filecache.Compiled
	ran := false
	if err := none.Guard(echo, func() error { ran = true; return nil }); err != nil || !ran {
		t.Fatal("a nil Compiled does not just compile")
	}
}
