package registry_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/host/registry"
)

// makePacks writes n tools (each in its own folder with a module of
// moduleSize bytes, a parameters schema of 5 properties and an example)
// under a temporary directory.
func makePacks(b *testing.B, n, moduleSize int) string {
	b.Helper()
	root := b.TempDir()
	module := make([]byte, moduleSize)
	for i := range module {
		module[i] = byte(i * 7)
	}
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("pack%02d", i/10), fmt.Sprintf("tool%03d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		module[0] = byte(i)
		if err := os.WriteFile(filepath.Join(dir, "tool.wasm"), module, 0o644); err != nil {
			b.Fatal(err)
		}
		m := fmt.Sprintf(`{
  "toolId": "gen%d:tool-%d",
  "displayName": "Generated %d",
  "description": "A generated tool for the load benchmark.",
  "version": "1.0.%d",
  "handler": {"type": "wasm", "module": "tool.wasm", "abi": "wasi-command"},
  "parameters": {"type": "object", "additionalProperties": false, "required": ["text"], "properties": {
    "text": {"type": "string", "maxLength": 10000}, "limit": {"type": "integer", "minimum": 1},
    "mode": {"enum": ["fast", "slow"]}, "flags": {"type": "array", "items": {"type": "string"}},
    "options": {"type": "object", "properties": {"x": {"type": "number"}}}}},
  "output": {"type": "object"},
  "securityContext": {"fileAccess": {"allowRead": ["data/**"], "allowWrite": ["$TMP/**"]}, "limits": {"timeoutMs": 5000}},
  "examples": [{"description": "basic", "input": {"text": "hello", "limit": 3}}],
  "tags": ["generated"]
}`, i%10, i, i, i)
		if err := os.WriteFile(filepath.Join(dir, "tool.tool.json"), []byte(m), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return root
}

func benchmarkLoad(b *testing.B, moduleSize int) {
	root := makePacks(b, 100, moduleSize)
	b.ReportAllocs()
	for b.Loop() {
		r := registry.New()
		n, failures := r.LoadDir(root)
		if n != 100 || len(failures) != 0 {
			b.Fatalf("loaded %d, failures %v", n, failures)
		}
	}
}

// BenchmarkLoadDir100 loads a 100-tool directory into a new registry per
// iteration (tiny modules: manifest parsing, schema compilation, path
// checks and hashing). Target: under 1 s cold.
func BenchmarkLoadDir100(b *testing.B) { benchmarkLoad(b, 1024) }

// BenchmarkLoadDir100_3MiB is the same with 3 MiB modules, the size of a
// Go wasip1 guest, so hashing is included at a realistic size.
func BenchmarkLoadDir100_3MiB(b *testing.B) { benchmarkLoad(b, 3<<20) }
