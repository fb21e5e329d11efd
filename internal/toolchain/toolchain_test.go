package toolchain

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		lang  Lang
		src   string
		err   string
	}{
		{"go module", []string{"go.mod", "main.go"}, Go, ".", ""},
		{"assemblyscript", []string{"package.json", "assembly/index.ts"}, AssemblyScript, "assembly/index.ts", ""},
		{"package.json alone is not assemblyscript", []string{"package.json"}, "", "", "no source"},
		{"one rust file", []string{"wrap.rs"}, Rust, "wrap.rs", ""},
		{"rust main among several", []string{"main.rs", "util.rs"}, Rust, "main.rs", ""},
		{"several rust files", []string{"a.rs", "b.rs"}, "", "", "several .rs files and no main.rs"},
		{"one C file", []string{"slug.c", "slug.tool.json"}, C, "slug.c", ""},
		{"nothing to build", []string{"tool.py"}, "", "", "no source agenthost knows how to build"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				p := filepath.Join(dir, filepath.FromSlash(f))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			lang, src, err := Detect(dir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Detect = %q %q %v, want an error with %q", lang, src, err, tc.err)
				}
				return
			}
			if err != nil || lang != tc.lang || src != tc.src {
				t.Fatalf("Detect = %q %q %v, want %q %q", lang, src, err, tc.lang, tc.src)
			}
		})
	}
}

func TestStepsMissingToolchain(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, lang := range []Lang{Go, C, AssemblyScript} {
		if _, err := Steps(context.Background(), lang, ".", "x", "x.wasm"); !errors.Is(err, ErrMissing) {
			t.Errorf("%s with an empty PATH: %v, want ErrMissing", lang, err)
		}
	}
	if steps, err := Steps(context.Background(), Python, ".", "x.py", ""); err != nil || steps != nil {
		t.Errorf("python: %v %v, want nothing to build", steps, err)
	}
	if _, err := Steps(context.Background(), "cobol", ".", "x", "x.wasm"); err == nil || !strings.Contains(err.Error(), "unknown language") {
		t.Errorf("cobol: %v", err)
	}
}
