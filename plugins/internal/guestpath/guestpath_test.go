package guestpath_test

import (
	"testing"

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
