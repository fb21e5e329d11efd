package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestServeNoAuthUsage pins where --no-auth is refused, with the reason.
func TestServeNoAuthUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"any address", []string{"serve", "--no-auth", "--addr", "0.0.0.0:8080"}, "--no-auth takes every request without a token, so serve listens on a loopback address only"},
		{"a routable address", []string{"serve", "--no-auth", "--addr", "192.0.2.1:8080"}, "not 192.0.2.1"},
		{"with --auth", []string{"serve", "--no-auth", "--auth", "auth.yaml", "--addr", "127.0.0.1:0"}, "give --auth or --no-auth, not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(context.Background(), tc.args, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("%d %s", code, errb.String())
			}
		})
	}
}

// TestServeNoAuth starts `agenthost serve --no-auth` on loopback: a call
// without a token is served as the default tenant, and what a web page
// could send (a Host it rebound to 127.0.0.1, an Origin of its own) is
// refused.
func TestServeNoAuth(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "agenthost")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	toolpacks, _ := filepath.Abs("../../toolpacks")
	cmd := exec.Command(bin, "serve", "--no-auth", "--addr", "127.0.0.1:0", "--dir", toolpacks, "--log-level", "error")
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(stderr)
	addr := regexp.MustCompile(`serving on (http://\S+)`)
	base, noToken := "", false
	for (base == "" || !strings.Contains(sc.Text(), "--no-auth")) && sc.Scan() {
		if m := addr.FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
		}
		noToken = noToken || strings.Contains(sc.Text(), "token (shown once)")
	}
	if base == "" || noToken {
		t.Fatalf("banner: base %q, a token printed: %v", base, noToken)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	for _, tc := range []struct {
		name, host, origin string
		status             int
		want               string
	}{
		{"no token", "", "", 200, `"hello":"serve"`},
		{"loopback origin", "", "http://localhost:3000", 200, `"hello":"serve"`},
		{"rebound host", "evil.example:8080", "", 401, "not a loopback name"},
		{"foreign origin", "", "https://evil.example", 401, "not on loopback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", base+"/v1/tools/core:echo/call", strings.NewReader(`{"hello":"serve"}`))
			req.Header.Set("Content-Type", "application/json")
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
		})
	}
}
