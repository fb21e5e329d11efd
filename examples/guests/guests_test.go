// Package guests_test runs the example guests written in C, Rust and
// AssemblyScript (built by `make guests`) through a host and checks every
// manifest example.
package guests_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/host"
)

func TestGuests(t *testing.T) {
	for _, tc := range []struct{ dir, id, module string }{
		{"c", "c:slug", "slug.wasm"},
		{"rust", "rust:wrap", "wrap.wasm"},
		{"assemblyscript", "as:vowels", "vowels.wasm"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(tc.dir, tc.module)); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("%s is not built (make guests): %v", tc.module, err)
				}
				t.Skipf("%s is not built (make guests needs its toolchain): %v", tc.module, err)
			}
			ctx := context.Background()
			h, err := host.New(ctx, host.Options{Dirs: []string{tc.dir}, CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close(ctx)
			if f := h.Failures(); len(f) > 0 {
				t.Fatalf("load: %v", f[0])
			}
			results, err := h.RunExamples(ctx, tc.id)
			if err != nil {
				t.Fatal(err)
			}
			if len(results) == 0 {
				t.Fatal("no examples")
			}
			for _, r := range results {
				if !r.Passed {
					t.Errorf("example %d (%s): %s", r.Index+1, r.Description, r.Reason)
				}
			}
		})
	}
}
