package wasm

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/agenthost/agenthost/host/internal/filecache"
)

// TestCompiledFileName pins the restated derivation of wazero's compiled
// file names (filecache.Compiled) for the runner's configuration:
// compiling a module with it writes the file Compiled.Path names. A wazero upgrade
// that changes the derivation fails here, not silently in the field.
func TestCompiledFileName(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("wazero compiles (and stores compiled files) on amd64 and arm64 only")
	}
	modules := map[string]string{
		"echo":  filepath.Join("..", "..", "..", "testdata", "guests", "echo", "echo.wasm"),
		"exit3": filepath.Join("..", "..", "..", "testdata", "guests", "exit3", "exit3.wasm"),
	}
	for name, path := range modules {
		t.Run(name, func(t *testing.T) {
			code, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			cache, err := wazero.NewCompilationCacheWithDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			rt := wazero.NewRuntimeWithConfig(ctx, interruptConfig(wazero.NewRuntimeConfigCompiler()).WithCompilationCache(cache))
			defer rt.Close(ctx)
			if _, err := rt.CompileModule(ctx, code); err != nil {
				t.Fatal(err)
			}
			c, err := filecache.NewCompiled(dir, nil, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := c.Path(code)
			if _, err := os.Stat(want); err != nil {
				got, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
				t.Fatalf("no compiled file at %s (%v); wazero wrote %q", want, err, got)
			}
		})
	}
}
