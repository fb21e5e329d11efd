package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestServe starts `agenthost serve` without --auth (loopback, printed
// token), calls a tool, runs the example profile's agent over AG-UI,
// reads its history, and stops it with SIGTERM (a clean exit).
func TestServe(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "agenthost")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	toolpacks, _ := filepath.Abs("../../toolpacks")
	profiles, _ := filepath.Abs("../../examples/agent")
	// An OTLP/HTTP receiver on loopback counts the trace exports.
	var exports atomic.Int32
	otlp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" && r.ContentLength != 0 {
			exports.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer otlp.Close()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--dir", toolpacks, "--profiles", profiles, "--log-level", "error", "--otlp", otlp.URL)
	cache := t.TempDir()
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	base, token := serveBanner(t, bufio.NewScanner(stderr))
	go io.Copy(io.Discard, stderr)
	do := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
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
	if s, b := do("POST", "/v1/tools/core:echo/call", `{"hello":"serve"}`); s != 200 || !strings.Contains(b, `"hello":"serve"`) {
		t.Fatalf("call: %d %s", s, b)
	}
	s, b := do("POST", "/v1/agents/text-analyst/runs", `{"threadId":"demo-thread","runId":"r1","messages":[{"id":"1","role":"user","content":"Fingerprint this."}]}`)
	if s != 200 || !strings.Contains(b, `"type":"TOOL_CALL_RESULT"`) || !strings.Contains(b, `"type":"RUN_FINISHED"`) {
		t.Fatalf("run: %d %s", s, b)
	}
	if s, b := do("GET", "/v1/sessions/demo-thread/history", ""); s != 200 || !strings.Contains(b, "workflow__fingerprint") {
		t.Fatalf("history: %d %s", s, b)
	}
	s, b = do("POST", "/v1/agents/text-analyst/runs", `{"threadId":"demo-thread","runId":"r2","messages":[{"id":"2","role":"user","content":"Again."}]}`)
	if s != 200 {
		t.Fatalf("second run: %d %s", s, b)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if exports.Load() == 0 {
		t.Error("no trace was exported over OTLP")
	}
	// The audit reads the failure analytics from the history.
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"audit", "--dir", toolpacks, "--store", filepath.Join(cache, "agenthost", "serve"), "--format", "json"}, strings.NewReader(""), &out, &errb)
	if code != 0 && code != 1 {
		t.Fatalf("audit: %d %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `"history": {`) || !strings.Contains(out.String(), `"calls": 2`) {
		t.Fatalf("audit history: %s", out.String())
	}
}

// TestServeUsage pins that serve without --auth refuses a non-loopback
// address.
func TestServeUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"serve", "--addr", "0.0.0.0:8080"}, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), "loopback") {
		t.Fatalf("%d %s", code, errb.String())
	}
}

// serveBanner reads the address and token serve prints on stderr.
func serveBanner(t *testing.T, sc *bufio.Scanner) (base, token string) {
	t.Helper()
	addr := regexp.MustCompile(`serving on (http://\S+)`)
	tok := regexp.MustCompile(`shown once\): http://\S+/#token=(\S+)`)
	for (base == "" || token == "") && sc.Scan() {
		if m := addr.FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
		}
		if m := tok.FindStringSubmatch(sc.Text()); m != nil {
			token = m[1]
		}
	}
	if base == "" || token == "" {
		t.Fatal("serve printed no address or token")
	}
	return base, token
}
