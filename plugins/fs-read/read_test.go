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

// guestRoot makes a folder standing for the guest's file system root.
func guestRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestRead(t *testing.T) {
	root := guestRoot(t, map[string]string{
		"workspace/a.txt":     "hello world\n",
		"workspace/utf8.txt":  "añb", // ñ is 2 bytes: a=0, ñ=1..2, b=3
		"workspace/bin.dat":   "\x00\xff\xfe",
		"workspace/empty.txt": "",
		"tmp/out.json":        `{"ok":true}`,
	})
	tests := []struct {
		name string
		in   Input
		want Output
	}{
		{"relative path is in the workspace", Input{Path: "a.txt"},
			Output{Path: "/workspace/a.txt", Size: 12, BytesRead: 12, Encoding: "utf-8", Content: "hello world\n", EOF: true}},
		{"absolute tmp path", Input{Path: "/tmp/out.json"},
			Output{Path: "/tmp/out.json", Size: 11, BytesRead: 11, Encoding: "utf-8", Content: `{"ok":true}`, EOF: true}},
		{"offset and limit", Input{Path: "a.txt", Offset: 6, Limit: intp(5)},
			Output{Path: "/workspace/a.txt", Size: 12, Offset: 6, BytesRead: 5, Encoding: "utf-8", Content: "world", NextOffset: int64p(11)}},
		{"offset at end", Input{Path: "a.txt", Offset: 12},
			Output{Path: "/workspace/a.txt", Size: 12, Offset: 12, Encoding: "utf-8", EOF: true}},
		{"limit cutting a character backs off", Input{Path: "utf8.txt", Limit: intp(2)},
			Output{Path: "/workspace/utf8.txt", Size: 4, BytesRead: 1, Encoding: "utf-8", Content: "a", NextOffset: int64p(1)}},
		{"continue from nextOffset", Input{Path: "utf8.txt", Offset: 1, Limit: intp(2)},
			Output{Path: "/workspace/utf8.txt", Size: 4, Offset: 1, BytesRead: 2, Encoding: "utf-8", Content: "ñ", NextOffset: int64p(3)}},
		{"base64 reads binary", Input{Path: "bin.dat", Encoding: "base64"},
			Output{Path: "/workspace/bin.dat", Size: 3, BytesRead: 3, Encoding: "base64", Content: "AP/+", EOF: true}},
		{"base64 does not back off", Input{Path: "utf8.txt", Limit: intp(2), Encoding: "base64"},
			Output{Path: "/workspace/utf8.txt", Size: 4, BytesRead: 2, Encoding: "base64", Content: "YcM=", NextOffset: int64p(2)}},
		{"empty file", Input{Path: "empty.txt"},
			Output{Path: "/workspace/empty.txt", Encoding: "utf-8", EOF: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(root, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Read =\n %+v\nwant\n %+v", got, tc.want)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	root := guestRoot(t, map[string]string{
		"workspace/a.txt":   "hello",
		"workspace/bin.dat": "\x00\xff\xfe",
		"workspace/d/x":     "",
	})
	tests := []struct {
		name     string
		in       Input
		wantCode abi.Code
		want     string
	}{
		{"missing", Input{Path: "nope.txt"}, abi.CodeToolError, "no such file"},
		{"escape resolves inside the guest", Input{Path: "../../etc/passwd"}, abi.CodeToolError, "open /etc/passwd: no such file"},
		{"directory", Input{Path: "d"}, abi.CodeInvalidArguments, "use fs:list"},
		{"binary as utf-8", Input{Path: "bin.dat"}, abi.CodeInvalidArguments, "read it with encoding base64"},
		{"empty path", Input{Path: ""}, abi.CodeInvalidArguments, "path is empty"},
		{"negative offset", Input{Path: "a.txt", Offset: -1}, abi.CodeInvalidArguments, "offset must not be negative"},
		{"offset past end", Input{Path: "a.txt", Offset: 6}, abi.CodeInvalidArguments, "past the end"},
		{"limit zero", Input{Path: "a.txt", Limit: intp(0)}, abi.CodeInvalidArguments, "limit must be between"},
		{"limit too big", Input{Path: "a.txt", Limit: intp(maxLimit + 1)}, abi.CodeInvalidArguments, "limit must be between"},
		{"bad encoding", Input{Path: "a.txt", Encoding: "latin1"}, abi.CodeInvalidArguments, "unknown encoding"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(root, tc.in)
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

func TestReadPermissionDenied(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores file modes")
	}
	root := guestRoot(t, map[string]string{"workspace/secret": "x"})
	if err := os.Chmod(filepath.Join(root, "workspace/secret"), 0); err != nil {
		t.Fatal(err)
	}
	_, err := Read(root, Input{Path: "secret"})
	if !errors.Is(err, abi.ErrPermissionDenied) {
		t.Errorf("err = %v, want PERMISSION_DENIED", err)
	}
}

func TestTrimPartialRune(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"abc", "abc"},
		{"a\xc3", "a"},             // first byte of ñ
		{"a\xc3\xb1", "a\xc3\xb1"}, // complete ñ
		{"\xe6\x97", ""},           // 2 of 3 bytes of 日
		{"x\xf0\x9f\x98", "x"},     // 3 of 4 bytes of an emoji
		{"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"},
		{"a\x80", "a\x80"}, // stray continuation byte: left for the validity check
	}
	for _, tc := range tests {
		if got := string(trimPartialRune([]byte(tc.in))); got != tc.want {
			t.Errorf("trimPartialRune(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
