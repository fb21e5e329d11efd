//go:build linux

package isolate

import (
	"context"
	"os/exec"
	"testing"
)

// BenchmarkRun measures the fixed cost of each protection on a trivial
// program (/usr/bin/true), against os/exec without any.
func BenchmarkRun(b *testing.B) {
	f := Probe()
	rules := []Rule{{Path: "/usr", Access: Read | Exec}, {Path: "/lib", Access: Read | Exec},
		{Path: "/lib64", Access: Read | Exec}, {Path: "/etc/ld.so.cache", Access: Read}}
	b.Run("os-exec", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := exec.Command("/usr/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	cases := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"run", Config{}, true},
		{"landlock", Config{Landlock: true, Rules: rules}, f.LandlockABI > 0},
		{"namespaces", Config{Namespaces: true, UID: 65534}, f.Namespaces},
		{"prlimit", Config{Prlimit: f.Prlimit, Limits: Limits{Processes: 64, OpenFiles: 64}}, f.Prlimit != ""},
		{"all", Config{Landlock: true, Rules: rules, Namespaces: true, UID: 65534, Prlimit: f.Prlimit,
			Limits: Limits{Processes: 64, OpenFiles: 64}}, f.LandlockABI > 0 && f.Namespaces && f.Prlimit != ""},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			if !tc.ok {
				b.Skip("protection unavailable")
			}
			for i := 0; i < b.N; i++ {
				c := tc.cfg
				c.Path, c.Dir = "/usr/bin/true", "/"
				ex, err := Run(context.Background(), &c)
				if err != nil || ex.Code != 0 {
					b.Fatal(err, ex)
				}
			}
		})
	}
}
