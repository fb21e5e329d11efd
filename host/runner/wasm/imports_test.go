package wasm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
)

// coreModule assembles a core module that imports each of imports (as
// "module.name" functions of type () -> ()) and exports an empty _start.
func coreModule(imports ...string) []byte {
	vec := func(items ...[]byte) []byte {
		out := []byte{byte(len(items))}
		for _, it := range items {
			out = append(out, it...)
		}
		return out
	}
	str := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	section := func(id byte, body []byte) []byte { return append([]byte{id, byte(len(body))}, body...) }
	var ims [][]byte
	for _, im := range imports {
		mod, name, _ := strings.Cut(im, ".")
		ims = append(ims, append(append(str(mod), str(name)...), 0x00, 0x00))
	}
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, section(1, vec([]byte{0x60, 0x00, 0x00}))...)                        // type 0: () -> ()
	m = append(m, section(2, vec(ims...))...)                                          // imports
	m = append(m, section(3, vec([]byte{0x00}))...)                                    // one function of type 0
	m = append(m, section(7, vec(append(str("_start"), 0x00, byte(len(imports)))))...) // export it as _start
	m = append(m, section(10, vec([]byte{0x02, 0x00, 0x0b}))...)                       // its body: no locals, end
	return m
}

// TestUnknownImportNamed checks that a module importing something the
// runner does not provide is refused at Prepare with a LOAD_ERROR that
// names the import and says what the host provides instead, and that a
// module importing only provided WASI functions prepares.
func TestUnknownImportNamed(t *testing.T) {
	r := newRunner(t)
	e := newEnv(t)
	tests := []struct {
		name    string
		imports []string
		want    []string // in the error; none: Prepare succeeds
	}{
		{"provided WASI functions", []string{"wasi_snapshot_preview1.fd_write", "wasi_snapshot_preview1.proc_exit"}, nil},
		{"no imports", nil, nil},
		{"a WASI function the host lacks", []string{"wasi_snapshot_preview1.fd_write", "wasi_snapshot_preview1.sock_open"},
			[]string{"imports wasi_snapshot_preview1.sock_open, which this host does not provide", "fd_write", "path_open"}},
		{"WASI preview 0", []string{"wasi_unstable.fd_write"}, []string{"wasi_unstable.fd_write", "WASI preview 0"}},
		{"a preview 2 interface", []string{"wasi:cli/stdout@0.2.0.get-stdout"}, []string{"wasi:cli/stdout@0.2.0", "component model"}},
		{"an Extism plugin as a command", []string{"extism:host/env.input_length"}, []string{"extism:host/env.input_length", `handler.abi to "extism"`}},
		{"an env import", []string{"env.memcpy_fast", "env.log"}, []string{"env.memcpy_fast, env.log", "only wasi_snapshot_preview1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "m.wasm")
			if err := os.WriteFile(file, coreModule(tc.imports...), 0o644); err != nil {
				t.Fatal(err)
			}
			tool := toolFor(t, file)
			_, err := r.Prepare(context.Background(), tool, e.grant(tool.Dir))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Prepare: %v", err)
				}
				return
			}
			if !errors.Is(err, abi.ErrLoadError) {
				t.Fatalf("Prepare error %v, want a LOAD_ERROR", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
