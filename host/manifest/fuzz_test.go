package manifest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/host/manifest"
)

// FuzzManifest checks that Parse never panics, that what it accepts has a
// valid ID and version, and that an accepted manifest re-encoded from the
// Go types parses again to the same tool. Seeds are the *.json files in
// testdata/fuzz/FuzzManifest at the repository root.
func FuzzManifest(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("..", "..", "testdata", "fuzz", "FuzzManifest", "*.json"))
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds: %v", err)
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tool, err := manifest.Parse(data, "fuzz/x.tool.json")
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error text")
			}
			return
		}
		if manifest.ValidID(tool.ToolID) != nil || manifest.ValidVersion(tool.Version) != nil {
			t.Fatalf("accepted invalid id/version %q %q", tool.ToolID, tool.Version)
		}
		again, err := json.Marshal(tool)
		if err != nil {
			t.Fatalf("marshal accepted tool: %v", err)
		}
		tool2, err := manifest.Parse(again, "fuzz/x.tool.json")
		if err != nil {
			t.Fatalf("re-encoded manifest rejected: %v\n%s", err, again)
		}
		b2, _ := json.Marshal(tool2)
		if string(b2) != string(again) {
			t.Fatalf("round trip changed the tool:\n%s\n%s", again, b2)
		}
	})
}
