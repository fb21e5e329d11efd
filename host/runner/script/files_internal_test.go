package script

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/internal/isolate"
	"github.com/agenthost/agenthost/host/policy"
)

func TestFixedPrefix(t *testing.T) {
	tests := []struct {
		pattern, prefix string
		exact           bool
	}{
		{"**", "", true},
		{"", "", true},
		{"data/**", "data", true},
		{"data", "data", true},
		{"a/b/c.txt", "a/b/c.txt", true},
		{"data/*.csv", "data", false},
		{"src/*/gen/**", "src", false},
		{"*.md", "", false},
		{"a/**/b", "a", false},
		{"a/file?.txt", "a", false},
		{"/data/**/", "data", true},
	}
	for _, tc := range tests {
		t.Run(tc.pattern, func(t *testing.T) {
			p, e := fixedPrefix(tc.pattern)
			if p != tc.prefix || e != tc.exact {
				t.Fatalf("fixedPrefix(%q) = %q, %v; want %q, %v", tc.pattern, p, e, tc.prefix, tc.exact)
			}
		})
	}
}

func TestFileRules(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	for _, d := range []string{"data", "out", "docs"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "escape")); err != nil {
		t.Fatal(err)
	}
	rw := func(root policy.Root, p string) policy.PathRule { return policy.PathRule{Root: root, Pattern: p} }
	g := &policy.Grant{Workspace: ws, ToolDir: t.TempDir(),
		Read: []policy.PathRule{rw(policy.RootWorkspace, "data/**"), rw(policy.RootWorkspace, "notes.txt"),
			rw(policy.RootWorkspace, "docs/*.md"), rw(policy.RootWorkspace, "escape/**"), rw(policy.RootWorkspace, "missing/**"),
			rw(policy.RootTool, "**"), rw(policy.RootCache, "**")},
		Write: []policy.PathRule{rw(policy.RootWorkspace, "out/**"), rw(policy.RootTool, "x"), rw(policy.RootTmp, "**")},
	}
	rules, ws2 := fileRules(g, "/tmp/call")
	want := map[string]isolate.Access{
		filepath.Join(ws, "data"):      isolate.Read,
		filepath.Join(ws, "notes.txt"): isolate.Read,
		filepath.Join(ws, "docs"):      isolate.Read,
		filepath.Join(ws, "out"):       isolate.Read | isolate.Write,
		g.ToolDir:                      isolate.Read,
		"/tmp/call":                    isolate.Read | isolate.Write,
	}
	got := map[string]isolate.Access{}
	for _, r := range rules {
		got[r.Path] |= r.Access
	}
	for p, a := range want {
		if got[p] != a {
			t.Errorf("rule %s = %v, want %v", p, got[p], a)
		}
	}
	if len(got) != len(want) {
		t.Errorf("rules %v, want exactly %v", got, want)
	}
	var text []string
	for _, w := range ws2 {
		text = append(text, w.String())
	}
	joined := strings.Join(text, "\n")
	for _, needle := range []string{
		"docs/*.md is enforced as read of " + filepath.Join(ws, "docs"),
		"escape/** ", "resolves outside its root",
		"missing/**", "does not exist",
		"$TOOL is never writable",
		"cache has no folder",
		// "data/**" excludes hidden names, which Landlock cannot.
		"data/** is enforced as read of " + filepath.Join(ws, "data") + " (Landlock grants whole directories: hidden entries",
	} {
		if !strings.Contains(joined, needle) {
			t.Errorf("widenings lack %q:\n%s", needle, joined)
		}
	}
	if strings.Contains(joined, "notes.txt") {
		t.Errorf("exact grants reported as widened:\n%s", joined)
	}
	// Widenings (for audit) reports the same without a $TMP.
	if n := len(Widenings(g)); n != len(ws2) {
		t.Errorf("Widenings reports %d, calls log %d", n, len(ws2))
	}
}
