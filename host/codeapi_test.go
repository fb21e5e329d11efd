package host_test

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
)

// TestCodeAPI renders the typed API of the tools a program may call and
// searches it: code tools and tools outside the scope are left out.
func TestCodeAPI(t *testing.T) {
	h := codeHost(t, testBudgets)
	only := func(id string) bool { return id != "fs:write" }
	tests := []struct {
		lang, id, want string
	}{
		{host.CodeAPITypeScript, "fs:read", "tools.fs.read(args: { "},
		{host.CodeAPITypeScript, "fs:read", "path: string"},
		{host.CodeAPITypeScript, "core:echo", "tools.core.echo(args: Record<string, unknown>): Promise<Record<string, unknown>>;"},
		{host.CodeAPIStarlark, "fs:read", "tools.fs.read("},
		{host.CodeAPIStarlark, "fs:read", "tools.fs.read(path: str, encoding: str = None"},
	}
	for _, tc := range tests {
		decls, err := h.CodeAPI(tc.lang, only)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, d := range decls {
			if strings.HasPrefix(d.ID, "code:") || d.ID == "fs:write" {
				t.Fatalf("%s offered to a program", d.ID)
			}
			if d.ID == tc.id {
				found = true
				if !strings.Contains(d.Declaration, tc.want) {
					t.Fatalf("%s %s:\n%s\nlacks %q", tc.lang, tc.id, d.Declaration, tc.want)
				}
			}
		}
		if !found {
			t.Fatalf("%s missing from the %s API", tc.id, tc.lang)
		}
	}
	if _, err := h.CodeAPI("cobol", nil); err == nil {
		t.Fatal("an unknown language was accepted")
	}
	hits, err := h.SearchTools("read a file", host.CodeAPIStarlark, only, 2)
	if err != nil || len(hits) == 0 || hits[0].ID != "fs:read" || len(hits) > 2 {
		t.Fatalf("search: %v %+v", err, hits)
	}
}
