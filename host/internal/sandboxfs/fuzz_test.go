package sandboxfs_test

import (
	"strings"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/agenthost/agenthost/host/internal/sandboxfs"
)

// FuzzOpen checks, for any guest path, that what the guest can open and
// read is a granted file: never secret.txt (not granted), never
// outside.txt (outside the mount), whatever the dots, slashes and
// symlinks in the path. Every refusal is recorded.
func FuzzOpen(f *testing.F) {
	for _, seed := range []string{
		"public.txt", "secret.txt", "link-secret", "link-up", "link-abs", "data/link-back",
		"../outside.txt", "data/../secret.txt", "data/../../outside.txt", "./link-ok",
		"link-ok/", "loop", "/secret.txt", "data//a.txt", "out/../link-secret", "",
	} {
		f.Add(seed)
	}
	ws := workspace(f)
	f.Fuzz(func(t *testing.T, p string) {
		d := sandboxfs.NewDenials(nil)
		fs, err := sandboxfs.New(sandboxfs.Config{Root: "workspace", Dir: ws, GuestPath: "/workspace", Checker: grant, Denials: d})
		if err != nil {
			t.Fatal(err)
		}
		defer fs.Close()
		file, errno := fs.OpenFile(p, experimentalsys.O_RDONLY, 0)
		if errno == experimentalsys.EACCES && d.Count() == 0 {
			t.Fatalf("%q refused without a record", p)
		}
		if errno != 0 {
			return
		}
		defer file.Close()
		if isDir, _ := file.IsDir(); isDir {
			return
		}
		buf := make([]byte, 64)
		n, _ := file.Read(buf)
		if got := string(buf[:n]); strings.Contains(got, "secret") || strings.Contains(got, "outside") {
			t.Fatalf("%q read %q", p, got)
		}
	})
}
