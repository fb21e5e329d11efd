// Package hosttest has exported helpers for tests of code that embeds
// agenthost: locating the repository's built toolpacks, building a host
// with a test policy, and golden-file comparison.
package hosttest

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/policy"
)

// update rewrites golden files instead of comparing them (go test -update).
var update = flag.Bool("update", false, "rewrite golden files")

// Root returns the repository root (the folder holding go.mod).
func Root(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("hosttest: cannot locate the repository")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Toolpacks returns the repository's toolpacks folder and fails the test
// when its modules have not been built (`make toolpacks`).
func Toolpacks(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(Root(t), "toolpacks")
	if _, err := os.Stat(filepath.Join(dir, "core", "echo.wasm")); err != nil {
		t.Fatalf("hosttest: toolpacks are not built; run `make toolpacks` first (%v)", err)
	}
	return dir
}

// Policy parses a policy document (JSON or YAML) for a test; relative
// paths in it are relative to the test's temporary folder.
func Policy(t testing.TB, doc string) *policy.Policy {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(path)
	if err != nil {
		t.Fatalf("hosttest: policy: %v", err)
	}
	return p
}

// NewHost builds a host over dirs with policy p (nil = the default) and a
// per-test cache folder, and closes it when the test ends.
func NewHost(t testing.TB, p *policy.Policy, dirs ...string) *host.Host {
	t.Helper()
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{Dirs: dirs, Policy: p, CacheDir: CacheDir(t)})
	if err != nil {
		t.Fatalf("hosttest: new host: %v", err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	return h
}

// CacheDir returns a compilation cache shared by the test binaries of one
// machine, so that a Go guest is compiled once per test run, not per test.
func CacheDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "agenthost-test-cache")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Golden compares got with the golden file at path, or rewrites the file
// when the test runs with -update.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run with -update to create it)", path, err)
	}
	if string(want) != string(got) {
		t.Errorf("golden %s differs (run with -update after checking):\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}
