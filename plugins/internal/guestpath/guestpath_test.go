package guestpath_test

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/plugins/internal/guestpath"
)

func TestResolve(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: "notes.txt", want: "/workspace/notes.txt"},
		{in: ".", want: "/workspace"},
		{in: "a/./b//c/", want: "/workspace/a/b/c"},
		{in: "/tmp/out.txt", want: "/tmp/out.txt"},
		{in: "/tool/README.md", want: "/tool/README.md"},
		{in: "/workspace/../etc/passwd", want: "/etc/passwd"},
		{in: "../../etc/passwd", want: "/etc/passwd"},
		{in: `dir\file`, want: `/workspace/dir\file`},
		{in: "", wantErr: true},
		{in: "  ", wantErr: true},
		{in: "a\x00b", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := guestpath.Resolve(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Resolve(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("Resolve(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestFileError(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode abi.Code
		want     string
	}{
		{"not exist", &fs.PathError{Op: "open", Path: "/host/x", Err: fs.ErrNotExist}, abi.CodeToolError, "open /workspace/x: no such file or directory (relative paths are inside /workspace)"},
		{"permission", &fs.PathError{Op: "open", Path: "/host/x", Err: fs.ErrPermission}, abi.CodePermissionDenied, "open /workspace/x: permission denied by the sandbox"},
		{"other", errors.New("disk on fire"), abi.CodeToolError, "open /workspace/x: disk on fire"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := guestpath.FileError("open", "/workspace/x", tc.err)
			var ae *abi.Error
			code, msg := abi.CodeToolError, err.Error()
			if errors.As(err, &ae) {
				code, msg = ae.Code, ae.Message
			}
			if code != tc.wantCode || msg != tc.want {
				t.Errorf("FileError = %s %q, want %s %q", code, msg, tc.wantCode, tc.want)
			}
			if tc.name == "other" && !errors.Is(err, tc.err) {
				t.Errorf("FileError does not wrap %v", tc.err)
			}
		})
	}
}
