package audit_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/audit"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
)

// TestScriptDigestAndRisk pins what a reviewer sees of a script tool: the
// script's digest and its dependencies' digest (both were "none"), and a
// risk flag saying it runs native code.
func TestScriptDigestAndRisk(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/scriptpack")); err != nil {
		t.Fatal(err)
	}
	report := func() audit.Tool {
		tool, err := manifest.Load(filepath.Join(dir, "writer.tool.json"))
		if err != nil {
			t.Fatal(err)
		}
		g := policy.Default().Grant(tool, func(string) (string, bool) { return "", false })
		r := audit.Build([]audit.Entry{{Tool: tool, Grant: g, Path: tool.Path}}, audit.Environment{})
		return r.Tools[0]
	}
	before := report()
	if !strings.HasPrefix(before.Digest, "sha256:") || !strings.HasPrefix(before.DepsDigest, "sha256:") {
		t.Fatalf("digest %q, deps digest %q: want both sha256:...", before.Digest, before.DepsDigest)
	}
	var native bool
	for _, r := range before.Risks {
		native = native || r.Flag == audit.RiskNativeCode
	}
	if !native {
		t.Fatalf("risks %v lack %q", before.Risks, audit.RiskNativeCode)
	}
	if err := os.WriteFile(filepath.Join(dir, "wheels", "tiny-1.0-py3-none-any.whl"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	after := report()
	if after.DepsDigest == before.DepsDigest || after.Digest != before.Digest {
		t.Fatalf("a changed wheel must change only the deps digest: %q -> %q, %q -> %q", before.Digest, after.Digest, before.DepsDigest, after.DepsDigest)
	}
}
