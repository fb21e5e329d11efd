package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
)

func boolp(b bool) *bool { return &b }

func guestRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"tmp", "workspace"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestWriteSequence(t *testing.T) {
	root := guestRoot(t)
	steps := []struct {
		name     string
		in       Input
		want     Output
		wantFile string
	}{
		{"create with parents", Input{Path: "/tmp/a/b/note.txt", Content: "héllo"},
			Output{Path: "/tmp/a/b/note.txt", BytesWritten: 6, Size: 6, Created: true}, "héllo"},
		{"append", Input{Path: "/tmp/a/b/note.txt", Content: "!\n", Mode: "append"},
			Output{Path: "/tmp/a/b/note.txt", BytesWritten: 2, Size: 8}, "héllo!\n"},
		{"overwrite truncates", Input{Path: "/tmp/a/b/note.txt", Content: "x", Mode: "overwrite"},
			Output{Path: "/tmp/a/b/note.txt", BytesWritten: 1, Size: 1}, "x"},
		{"append creates", Input{Path: "/tmp/log.txt", Content: "l1\n", Mode: "append"},
			Output{Path: "/tmp/log.txt", BytesWritten: 3, Size: 3, Created: true}, "l1\n"},
		{"base64", Input{Path: "/tmp/bin", Content: "AP8=", Encoding: "base64"},
			Output{Path: "/tmp/bin", BytesWritten: 2, Size: 2, Created: true}, "\x00\xff"},
		{"relative goes to the workspace", Input{Path: "out/report.md", Content: "# R\n"},
			Output{Path: "/workspace/out/report.md", BytesWritten: 4, Size: 4, Created: true}, "# R\n"},
		{"empty content", Input{Path: "/tmp/empty", Content: "", Mode: "create"},
			Output{Path: "/tmp/empty", Created: true}, ""},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			got, err := Write(root, st.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != st.want {
				t.Errorf("Write = %+v, want %+v", got, st.want)
			}
			b, err := os.ReadFile(root + st.want.Path)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != st.wantFile {
				t.Errorf("file = %q, want %q", b, st.wantFile)
			}
		})
	}
}

func TestWriteErrors(t *testing.T) {
	root := guestRoot(t)
	if err := os.WriteFile(filepath.Join(root, "tmp/exists"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		in       Input
		wantCode abi.Code
		want     string
	}{
		{"create refuses existing", Input{Path: "/tmp/exists", Content: "x", Mode: "create"}, abi.CodeToolError, "already exists"},
		{"no parents without createDirs", Input{Path: "/tmp/new/x", Content: "x", CreateDirs: boolp(false)}, abi.CodeToolError, "no such file"},
		{"bad base64", Input{Path: "/tmp/x", Content: "!!", Encoding: "base64"}, abi.CodeInvalidArguments, "not valid base64"},
		{"bad encoding", Input{Path: "/tmp/x", Content: "x", Encoding: "utf-16"}, abi.CodeInvalidArguments, "unknown encoding"},
		{"bad mode", Input{Path: "/tmp/x", Content: "x", Mode: "truncate"}, abi.CodeInvalidArguments, "unknown mode"},
		{"empty path", Input{Content: "x"}, abi.CodeInvalidArguments, "path is empty"},
		{"directory", Input{Path: "/tmp", Content: "x"}, abi.CodeToolError, "open /tmp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Write(root, tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			var ae *abi.Error
			code := abi.CodeToolError
			if errors.As(err, &ae) {
				code = ae.Code
			}
			if code != tc.wantCode {
				t.Errorf("code = %s, want %s", code, tc.wantCode)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(root, "tmp/exists")); string(b) != "keep" {
		t.Errorf("mode create changed an existing file: %q", b)
	}
}
