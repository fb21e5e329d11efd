package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// TestServeWithWorkers runs serve --nats and two worker processes around
// an embedded nats-server: calls run on the workers; after one worker is
// killed (SIGKILL), calls are still answered.
func TestServeWithWorkers(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	defer ns.Shutdown()
	bin := filepath.Join(t.TempDir(), "agenthost")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	toolpacks, _ := filepath.Abs("../../toolpacks")
	start := func(args ...string) (*exec.Cmd, *bufio.Scanner) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, bufio.NewScanner(stderr)
	}
	var workers []*exec.Cmd
	for range 2 {
		w, sc := start("worker", "--nats", ns.ClientURL(), "--dir", toolpacks, "--log-level", "error")
		for sc.Scan() && !strings.Contains(sc.Text(), "serving") {
		}
		go func() {
			for sc.Scan() {
			}
		}()
		workers = append(workers, w)
	}
	_, sc := start("serve", "--addr", "127.0.0.1:0", "--nats", ns.ClientURL(), "--dir", toolpacks, "--log-level", "error")
	base, token := serveBanner(t, sc)
	call := func() (int, string) {
		req, _ := http.NewRequest("POST", base+"/v1/tools/core:echo/call", strings.NewReader(`{"via":"worker"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for range 6 {
		if s, b := call(); s != 200 || !strings.Contains(b, `"via":"worker"`) {
			t.Fatalf("call: %d %s", s, b)
		}
	}
	workers[0].Process.Signal(syscall.SIGKILL)
	workers[0].Wait()
	for range 6 {
		if s, b := call(); s != 200 || !strings.Contains(b, `"via":"worker"`) {
			t.Fatalf("after a worker died: %d %s", s, b)
		}
	}
}
