package audit

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestImports reads the imports of the shipped modules: a wasi-command
// tool imports WASI, an Extism plugin imports the Extism host.
func TestImports(t *testing.T) {
	for file, want := range map[string]string{
		"../../toolpacks/core/echo.wasm":     "wasi_snapshot_preview1.fd_write",
		"../../toolpacks/web/web-fetch.wasm": "extism:host/env.http_request",
	} {
		b, err := os.ReadFile(filepath.FromSlash(file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Imports(b)
		if err != nil || !slices.Contains(got, want) {
			t.Errorf("%s: %v %v", file, got, err)
		}
	}
	for _, bad := range [][]byte{nil, []byte("\x00asm"), []byte("\x00asm\x01\x00\x00\x00\x02\x7f"), []byte("\x00asm\x01\x00\x00\x00\x02\x05\xff\xff\xff\xff\xff")} {
		if _, err := Imports(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzImports: any bytes give imports or an error, never a panic.
func FuzzImports(f *testing.F) {
	if b, err := os.ReadFile("../../toolpacks/core/echo.wasm"); err == nil {
		f.Add(b[:min(len(b), 4096)])
	}
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x02\x07\x01\x01a\x01b\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Imports(b)
	})
}
