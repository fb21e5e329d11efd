//go:build linux

package isolate

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"
)

func TestLimitsPrlimitArgs(t *testing.T) {
	tests := []struct {
		name string
		in   Limits
		want []string
	}{
		{"empty", Limits{}, nil},
		{"all", Limits{AddressSpace: 1, Data: 2, Processes: 3, FileSize: 4, OpenFiles: 5, CPUSeconds: 6},
			[]string{"--as=1", "--data=2", "--nproc=3", "--fsize=4", "--nofile=5", "--cpu=6"}},
		{"some", Limits{Processes: 64}, []string{"--nproc=64"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.prlimitArgs(); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// requireFeatures skips when the kernel lacks what a test exercises.
func requireFeatures(t *testing.T, landlock, ns bool) Features {
	t.Helper()
	f := Probe()
	if landlock && f.LandlockABI == 0 {
		t.Skipf("Landlock unavailable: %v", f.LandlockErr)
	}
	if ns && !f.Namespaces {
		t.Skipf("namespaces unavailable: %v", f.NamespacesErr)
	}
	return f
}

func TestRunLandlock(t *testing.T) {
	requireFeatures(t, true, false)
	dir := t.TempDir()
	allowed := filepath.Join(dir, "allowed")
	denied := filepath.Join(dir, "denied")
	for _, d := range []string{allowed, denied} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f"), []byte("content"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rules := []Rule{{Path: "/usr", Access: Read | Exec}, {Path: "/lib", Access: Read | Exec}, {Path: "/lib64", Access: Read | Exec},
		{Path: "/etc/ld.so.cache", Access: Read}, {Path: allowed, Access: Read}}
	tests := []struct {
		name string
		file string
		ok   bool
	}{
		{"granted", filepath.Join(allowed, "f"), true},
		{"sibling", filepath.Join(denied, "f"), false},
		{"shadow", "/etc/shadow", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			ex, err := Run(context.Background(), &Config{Path: "/usr/bin/cat", Args: []string{tc.file}, Dir: "/",
				Stdout: &out, Stderr: &errb, Landlock: true, Rules: rules, UID: 65534})
			if err != nil {
				t.Fatal(err)
			}
			if (ex.Code == 0) != tc.ok {
				t.Fatalf("exit %d, want ok=%v (stdout %q, stderr %q)", ex.Code, tc.ok, out.String(), errb.String())
			}
		})
	}
	// The host process itself is not confined.
	if _, err := os.ReadFile(filepath.Join(denied, "f")); err != nil {
		t.Fatalf("host lost access after Run: %v", err)
	}
}

func TestRunKillsOnContext(t *testing.T) {
	requireFeatures(t, false, true)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	ex, err := Run(ctx, &Config{Path: "/usr/bin/sleep", Args: []string{"30"}, Dir: "/", Namespaces: true, UID: 65534})
	if err != nil {
		t.Fatal(err)
	}
	if !ex.Killed {
		t.Fatalf("want Killed, got %+v", ex)
	}
}

func TestRunRelativePath(t *testing.T) {
	if _, err := Run(context.Background(), &Config{Path: "sleep"}); err == nil {
		t.Fatal("want an error for a relative program path")
	}
}

func TestProtectionsNamed(t *testing.T) {
	ps := Probe().Protections()
	names := map[string]bool{}
	for _, p := range ps {
		if p.Detail == "" {
			t.Errorf("%s has no detail", p.Name)
		}
		names[p.Name] = true
	}
	for _, n := range []string{ProtLandlock, ProtNoNewPrivs, ProtUserNS, ProtNetNS, ProtPidNS, ProtRlimits} {
		if !names[n] {
			t.Errorf("missing protection %s", n)
		}
	}
}

func TestRunEgress(t *testing.T) {
	f := requireFeatures(t, true, true)
	if !f.Egress {
		t.Skip("egress needs a root host")
	}
	host, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	got := make(chan string, 4)
	egress := func(l net.Listener) []string {
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				// Answer, so that the child waits for the accept (Run
				// closes the listener once the child has exited).
				line, _ := bufio.NewReader(c).ReadString('\n')
				c.Write([]byte("ok\n"))
				got <- line
				c.Close()
			}
		}()
		return []string{"EGRESS_PORT=" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)}
	}
	hostPort := strconv.Itoa(host.Addr().(*net.TCPAddr).Port)
	// The first connect reaches the egress listener; the second, to a
	// listener in the host's namespace, must fail.
	script := `exec 3<>/dev/tcp/127.0.0.1/$EGRESS_PORT || exit 3
echo via-egress >&3
read -t 10 ack <&3 || exit 5
[ "$ack" = ok ] || exit 6
if echo direct >/dev/tcp/127.0.0.1/` + hostPort + `; then exit 4; fi
exit 0`
	var errb bytes.Buffer
	ex, err := Run(context.Background(), &Config{Path: "/usr/bin/bash", Args: []string{"-c", script}, Dir: "/",
		Stderr: &errb, Landlock: true, Namespaces: true, UID: 65534, Egress: egress,
		Rules: []Rule{{Path: "/usr", Access: Read | Exec}, {Path: "/lib", Access: Read | Exec}, {Path: "/lib64", Access: Read | Exec},
			{Path: "/etc/ld.so.cache", Access: Read}, {Path: "/dev/null", Access: Read | Write}}})
	if err != nil {
		t.Fatal(err)
	}
	if ex.Code != 0 {
		t.Fatalf("exit %d: %s", ex.Code, errb.String())
	}
	if s := <-got; s != "via-egress\n" {
		t.Fatalf("egress listener got %q", s)
	}
	if err := host.(*net.TCPListener).SetDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if c, err := host.Accept(); err == nil {
		c.Close()
		t.Fatal("the child reached a listener outside its namespace")
	}
}
