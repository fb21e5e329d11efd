package cache_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/cache"
)

var now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// fixture builds a cache folder: each file with its size and age in days.
func fixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := []struct {
		path string
		size int
		days int
	}{
		{"wazero/wazero-v1.12.0-amd64-linux/aaaa", 400, 1},
		{"wazero/meter/meter-bbbb.wasm", 300, 10},
		{"scripts/venv-cccc/bin/python", 100, 40},
		{"scripts/venv-cccc/lib/x.py", 100, 2}, // a recent use keeps the whole venv recent
		{"tools/core/echo/ws1/state.json", 50, 60},
		{"odd.bin", 10, 90},
		{"serve/history.db", 1000, 120},             // state, not cache: never listed or pruned
		{"serve/workspaces/acme/notes.txt", 5, 120}, // a tenant's private workspace
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat("x", f.size)), 0o600); err != nil {
			t.Fatal(err)
		}
		at := now.Add(-time.Duration(f.days) * 24 * time.Hour)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestList(t *testing.T) {
	entries, err := cache.List(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Kind+" "+e.Path)
	}
	want := []string{
		"compiled wazero/wazero-v1.12.0-amd64-linux/aaaa",
		"script-deps scripts/venv-cccc",
		"instrumented wazero/meter/meter-bbbb.wasm",
		"tool-cache tools/core/echo/ws1",
		"other odd.bin",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("entries, most recent first:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if entries[1].Size != 200 {
		t.Fatalf("venv size = %d, want 200 (both files)", entries[1].Size)
	}
}

func TestList_missingDir(t *testing.T) {
	entries, err := cache.List(filepath.Join(t.TempDir(), "none"))
	if err != nil || len(entries) != 0 {
		t.Fatalf("got %v, %v; want an empty cache", entries, err)
	}
}

func TestPrune(t *testing.T) {
	tests := []struct {
		name    string
		opts    cache.PruneOptions
		removed []string
	}{
		{"nothing", cache.PruneOptions{}, nil},
		{"older than 30 days", cache.PruneOptions{OlderThan: 30 * 24 * time.Hour}, []string{"tools/core/echo/ws1", "odd.bin"}},
		{"size cap evicts least recently used", cache.PruneOptions{MaxBytes: 650}, []string{"odd.bin", "tools/core/echo/ws1", "wazero/meter/meter-bbbb.wasm"}},
		{"both", cache.PruneOptions{OlderThan: 5 * 24 * time.Hour, MaxBytes: 100}, []string{"wazero/meter/meter-bbbb.wasm", "tools/core/echo/ws1", "odd.bin", "scripts/venv-cccc", "wazero/wazero-v1.12.0-amd64-linux/aaaa"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := fixture(t)
			tc.opts.Now = func() time.Time { return now }
			removed, err := cache.Prune(dir, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range removed {
				got = append(got, e.Path)
				if _, err := os.Stat(filepath.Join(dir, e.Path)); !os.IsNotExist(err) {
					t.Errorf("%s still exists", e.Path)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.removed, ",") {
				t.Fatalf("removed %v, want %v", got, tc.removed)
			}
			for _, kept := range []string{"serve/history.db", "serve/workspaces/acme/notes.txt"} {
				if _, err := os.Stat(filepath.Join(dir, kept)); err != nil {
					t.Errorf("prune removed state %s: %v", kept, err)
				}
			}
		})
	}
}
