package main

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
)

func intp(n int) *int       { return &n }
func int64p(n int64) *int64 { return &n }

func guestRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"workspace/README.md":           "# hi\n",
		"workspace/.env":                "SECRET=1",
		"workspace/.git/config":         "x",
		"workspace/data/a.csv":          "a\n",
		"workspace/data/b.json":         "{}",
		"workspace/data/deep/c.csv":     "c,d\n",
		"workspace/src/main.go":         "package main\n",
		"workspace/src/util/strings.go": "package util\n",
		"tmp/scratch.txt":               "s",
	}
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("README.md", filepath.Join(root, "workspace/link")); err != nil {
		t.Fatal(err)
	}
	return root
}

func paths(out Output) []string {
	var ps []string
	for _, e := range out.Entries {
		ps = append(ps, e.Path)
	}
	return ps
}

func TestList(t *testing.T) {
	root := guestRoot(t)
	tests := []struct {
		name      string
		in        Input
		wantPath  string
		want      []string
		truncated bool
	}{
		{"workspace root by default", Input{}, "/workspace", []string{"README.md", "data", "link", "src"}, false},
		{"hidden included", Input{IncludeHidden: true}, "/workspace", []string{".env", ".git", "README.md", "data", "link", "src"}, false},
		{"recursive", Input{Path: "data", Recursive: true}, "/workspace/data", []string{"a.csv", "b.json", "deep", "deep/c.csv"}, false},
		{"name glob, not recursive", Input{Glob: "*.md"}, "/workspace", []string{"README.md"}, false},
		{"name glob, recursive", Input{Glob: "*.csv", Recursive: true}, "/workspace", []string{"data/a.csv", "data/deep/c.csv"}, false},
		{"double star implies recursive", Input{Glob: "**/*.go"}, "/workspace", []string{"src/main.go", "src/util/strings.go"}, false},
		{"path glob", Input{Glob: "src/*.go"}, "/workspace", []string{"src/main.go"}, false},
		{"class glob", Input{Path: "data", Glob: "[ab].*"}, "/workspace/data", []string{"a.csv", "b.json"}, false},
		{"max entries", Input{Recursive: true, MaxEntries: intp(2)}, "/workspace", []string{"README.md", "data"}, true},
		{"max entries exact", Input{Path: "data", MaxEntries: intp(3)}, "/workspace/data", []string{"a.csv", "b.json", "deep"}, false},
		{"tmp", Input{Path: "/tmp"}, "/tmp", []string{"scratch.txt"}, false},
		{"no match", Input{Glob: "*.xyz"}, "/workspace", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := List(root, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got.Path != tc.wantPath {
				t.Errorf("path = %s, want %s", got.Path, tc.wantPath)
			}
			if !reflect.DeepEqual(paths(got), tc.want) {
				t.Errorf("entries = %v, want %v", paths(got), tc.want)
			}
			if got.Truncated != tc.truncated || got.Count != len(tc.want) {
				t.Errorf("truncated %v count %d, want %v %d", got.Truncated, got.Count, tc.truncated, len(tc.want))
			}
		})
	}
}

func TestListEntryTypes(t *testing.T) {
	got, err := List(guestRoot(t), Input{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Path: "README.md", Type: TypeFile, Size: int64p(5)},
		{Path: "data", Type: TypeDir},
		{Path: "link", Type: TypeSymlink},
		{Path: "src", Type: TypeDir},
	}
	if !reflect.DeepEqual(got.Entries, want) {
		t.Errorf("entries = %+v, want %+v", got.Entries, want)
	}
}

func TestListErrors(t *testing.T) {
	root := guestRoot(t)
	tests := []struct {
		name     string
		in       Input
		wantCode abi.Code
		want     string
	}{
		{"missing", Input{Path: "nope"}, abi.CodeToolError, "no such file"},
		{"file", Input{Path: "README.md"}, abi.CodeInvalidArguments, "not a directory"},
		{"bad glob", Input{Glob: "[a"}, abi.CodeInvalidArguments, "invalid glob"},
		{"bad glob segment", Input{Glob: "src/[/x"}, abi.CodeInvalidArguments, "invalid glob"},
		{"zero max", Input{MaxEntries: intp(0)}, abi.CodeInvalidArguments, "maxEntries must be between"},
		{"huge max", Input{MaxEntries: intp(maxMaxEntries + 1)}, abi.CodeInvalidArguments, "maxEntries must be between"},
		{"blank path", Input{Path: " "}, abi.CodeInvalidArguments, "path is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := List(root, tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			var ae *abi.Error
			if !errors.As(err, &ae) || ae.Code != tc.wantCode {
				t.Errorf("err = %v, want code %s", err, tc.wantCode)
			}
		})
	}
}

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		glob, rel string
		want      bool
	}{
		{"", "any/thing", true},
		{"**", "a/b/c", true},
		{"*.go", "a/b/c.go", true},
		{"*.go", "c.go.txt", false},
		{"src/*.go", "src/a.go", true},
		{"src/*.go", "src/x/a.go", false},
		{"src/**/*.go", "src/a.go", true},
		{"src/**/*.go", "src/x/y/a.go", true},
		{"src/**", "src", true},
		{"src/**", "src/a/b", true},
		{"**/test/**", "a/test/b", true},
		{"**/test/**", "a/tests/b", false},
		{"**/**/x", "x", true},
		{"a/?/c", "a/b/c", true},
		{"a/?/c", "a/bb/c", false},
		{"a/b", "a/b/c", false},
	}
	for _, tc := range tests {
		if got := matchGlob(tc.glob, tc.rel); got != tc.want {
			t.Errorf("matchGlob(%q, %q) = %v, want %v", tc.glob, tc.rel, got, tc.want)
		}
	}
}
