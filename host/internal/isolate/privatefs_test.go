//go:build linux

package isolate

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// requirePrivateFS skips unless a child can get a private file system
// with a per-call uid (a root host with Landlock and namespaces).
func requirePrivateFS(t *testing.T) {
	t.Helper()
	f := requireFeatures(t, true, true)
	if !f.Root {
		t.Skip("a private file system needs a root host")
	}
}

// systemRules are what /usr/bin/cat needs, kept with their owners as a
// runner's runtime files are.
var systemRules = []Rule{{Path: "/usr", Access: Read | Exec, KeepOwner: true}, {Path: "/lib", Access: Read | Exec, KeepOwner: true},
	{Path: "/lib64", Access: Read | Exec, KeepOwner: true}, {Path: "/etc/ld.so.cache", Access: Read, KeepOwner: true}}

// userNamespaceFDs counts this process's descriptors of user namespaces.
func userNamespaceFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); strings.HasPrefix(l, "user:[") {
			n++
		}
	}
	return n
}

// catAs runs cat file as uid with a private file system of rules.
func catAs(t *testing.T, uid uint32, file string, rules []Rule, u *UserNamespaces) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	ex, err := Run(context.Background(), &Config{Path: "/usr/bin/cat", Args: []string{file}, Dir: "/",
		Stdout: &out, Stderr: &errb, Landlock: true, Namespaces: true, PrivateFS: true, Scratch: t.TempDir(),
		UID: uid, Rules: rules, UserNamespaces: u})
	if err != nil {
		t.Fatal(err)
	}
	return out.String() + errb.String(), ex.Code
}

// TestKeepOwner: a root-only file under a rule that keeps its owner stays
// unreadable to the child's uid; under a granted (idmapped) rule it
// appears owned by that uid and is readable.
func TestKeepOwner(t *testing.T) {
	requirePrivateFS(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "root-only")
	if err := os.WriteFile(file, []byte("ROOT-ONLY"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		keepOwner bool
		readable  bool
	}{
		{"granted: idmapped", false, true},
		{"not granted: its owner kept", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules := append(append([]Rule{}, systemRules...), Rule{Path: dir, Access: Read, KeepOwner: tc.keepOwner})
			out, code := catAs(t, 65534, file, rules, nil)
			if got := code == 0 && strings.Contains(out, "ROOT-ONLY"); got != tc.readable {
				t.Fatalf("readable %v, want %v (exit %d: %s)", got, tc.readable, code, out)
			}
		})
	}
}

// TestUserNamespacesClose: the user namespaces of idmapped mounts are
// the owner's to release. Cached ones stay open until Close; without a
// cache each child's is closed once its mounts are made. Either way no
// descriptor outlives them.
func TestUserNamespacesClose(t *testing.T) {
	requirePrivateFS(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	rules := append(append([]Rule{}, systemRules...), Rule{Path: dir, Access: Read})
	base := userNamespaceFDs(t)
	u := &UserNamespaces{}
	for _, uid := range []uint32{2_100_000_001, 2_100_000_002, 2_100_000_001} {
		if out, code := catAs(t, uid, file, rules, u); code != 0 {
			t.Fatalf("exit %d: %s", code, out)
		}
	}
	if n := userNamespaceFDs(t) - base; n != 2 {
		t.Fatalf("%d user namespaces cached for 2 uids", n)
	}
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	if n := userNamespaceFDs(t) - base; n != 0 {
		t.Fatalf("%d user namespaces left after Close", n)
	}
	// After Close, and without a cache, a child's namespace is its own.
	for _, u := range []*UserNamespaces{u, nil} {
		if out, code := catAs(t, 2_100_000_003, file, rules, u); code != 0 {
			t.Fatalf("exit %d: %s", code, out)
		}
		if n := userNamespaceFDs(t) - base; n != 0 {
			t.Fatalf("%d user namespaces left", n)
		}
	}
}
