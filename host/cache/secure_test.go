package cache_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/cache"
)

// TestResolve pins where the cache lives: never a shared temporary folder
// (with HOME and XDG_CACHE_HOME unset the host used $TMPDIR/agenthost, where
// a planted instrumented module ran).
func TestResolve(t *testing.T) {
	tests := []struct {
		name, explicit, xdg, home string
		want, wantErr             string
	}{
		{"explicit", "/srv/cache", "/x", "/h", "/srv/cache", ""},
		{"xdg", "", "/x", "/h", "/x/agenthost", ""},
		{"home", "", "", "/h", "/h/.cache/agenthost", ""},
		{"relative xdg ignored", "", "rel", "/h", "/h/.cache/agenthost", ""},
		{"nothing", "", "", "", "", "never used"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("XDG_CACHE_HOME", tc.xdg)
			t.Setenv("HOME", tc.home)
			got, err := cache.Resolve(tc.explicit)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %q, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestSecure refuses a cache folder others could write to or that another
// user owns, and creates a new one 0700.
func TestSecure(t *testing.T) {
	base := t.TempDir()
	fresh := filepath.Join(base, "new", "agenthost")
	if err := cache.Secure(fresh); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(fresh); fi.Mode().Perm() != 0o700 {
		t.Fatalf("created with mode %04o, want 0700", fi.Mode().Perm())
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := cache.Secure(open); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
		t.Fatalf("a world-writable folder: %v", err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(fresh, link); err != nil {
		t.Fatal(err)
	}
	if err := cache.Secure(link); err == nil {
		t.Fatal("a symbolic link was accepted")
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "other")
		if err := os.Mkdir(other, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := cache.Secure(other); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Fatalf("a folder of another user: %v", err)
		}
	}
}
