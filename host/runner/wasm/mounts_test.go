package wasm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/policy"
)

// TestMounts_symlinkedFolder: a mount whose workspace folder is a symlink
// leaving the workspace shows nothing of the link's target.
func TestMounts_symlinkedFolder(t *testing.T) {
	r := newRunner(t)
	e := newEnv(t)
	if err := os.Symlink(filepath.Dir(e.outside), filepath.Join(e.workspace, "up")); err != nil {
		t.Fatal(err)
	}
	p := prepare(t, r, goGuest(t, "goprobe"), e, func(g *policy.Grant) {
		g.Mounts = []policy.Mount{{GuestPath: "/mnt", Folder: "up"}}
		g.Read = append(g.Read, policy.PathRule{Root: policy.RootWorkspace, Pattern: "up/**"})
	})
	tests := []struct {
		name, path string
	}{
		{"through the mount", "/mnt/outside.txt"},
		{"through the workspace", "/workspace/up/outside.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, p, `{"strict":true,"ops":[{"op":"read","path":"`+tc.path+`"}]}`)
			if code(res) != abi.CodePermissionDenied || strings.Contains(string(res.Output), "HOST-ONLY") {
				t.Fatalf("code %q output %s logs %q", code(res), res.Output, res.Logs)
			}
		})
	}
}
