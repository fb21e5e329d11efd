package wire_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/wire"
)

var providerName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestName(t *testing.T) {
	long := "ns:" + strings.Repeat("a", 70)
	tests := []struct{ id, want string }{
		{"core:echo", "core__echo"},
		{"fs.tools:read-file", "fs_tools__read-file"},
		{"workflow:summarize_text", "workflow__summarize_text"},
		{"mcp:github.create/issue", "mcp__github_create_issue"},
		{long, "ns__" + strings.Repeat("a", 51) + "_"},
	}
	for _, tc := range tests {
		got := wire.Name(tc.id)
		if !strings.HasPrefix(got, tc.want) || (tc.id != long && got != tc.want) {
			t.Errorf("Name(%q) = %q, want %q", tc.id, got, tc.want)
		}
		if !providerName.MatchString(got) || strings.Contains(got, ":") {
			t.Errorf("Name(%q) = %q is not a valid provider / MCP name", tc.id, got)
		}
	}
	if n := wire.Name(long); len(n) != 64 || wire.Name(long+"b") == n {
		t.Errorf("long names: %q (%d), and a longer ID must not share it", n, len(n))
	}
}

func TestTable(t *testing.T) {
	tab, err := wire.NewTable([]string{"core:echo", "a:b.c", "fs:read"})
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := tab.ID("a__b_c"); !ok || id != "a:b.c" {
		t.Fatalf("ID(a__b_c) = %q, %v", id, ok)
	}
	if id, ok := tab.ID("core:echo"); !ok || id != "core:echo" {
		t.Fatalf("an ID used as a name: %q %v", id, ok)
	}
	if _, ok := tab.ID("nope"); ok {
		t.Fatal("an unknown name resolved")
	}
	_, err = wire.NewTable([]string{"a:b.c", "a:b_c"})
	if err == nil || !strings.Contains(err.Error(), "a:b.c and a:b_c") {
		t.Fatalf("collision: %v", err)
	}
}

// FuzzName checks that every valid-looking ID gets a provider-safe name.
func FuzzName(f *testing.F) {
	for _, s := range []string{"core:echo", "a.b/c:d", strings.Repeat("x", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if id == "" || strings.ContainsFunc(id, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune(":._-/", r))
		}) {
			return
		}
		if n := wire.Name(id); !providerName.MatchString(n) {
			t.Fatalf("Name(%q) = %q", id, n)
		}
	})
}
