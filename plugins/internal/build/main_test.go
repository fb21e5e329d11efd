package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"plugins/orphan/main.go", "toolpacks/x/readme.md"} {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("package main\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"unexpected argument", []string{"extra"}, 2, "unexpected arguments"},
		{"unknown flag", []string{"-nope"}, 2, "flag provided but not defined"},
		{"missing plugins folder", []string{"-plugins", filepath.Join(dir, "none"), "-toolpacks", filepath.Join(dir, "toolpacks")}, 1, "read plugins"},
		{"nothing to build warns about orphans", []string{"-plugins", filepath.Join(dir, "plugins"), "-toolpacks", filepath.Join(dir, "toolpacks")}, 0, "warning: no manifest under"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit = %d, want %d (stderr %s)", code, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}
