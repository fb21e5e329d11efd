package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/jobs/natsexec"
	"github.com/agenthost/agenthost/host/jobs/natsexec/queuetest"
	"github.com/agenthost/agenthost/host/store"
)

// TestServeWithWorkers runs serve --nats and two worker processes around
// the deploy example's nats-server (TLS, nkeys, permissions) with a
// shared key: calls run on the workers; a call forged without the key is
// dropped and shows in a worker's /metrics; serve's /metrics has the
// counter too; after one worker is killed (SIGKILL), calls are still
// answered.
func TestServeWithWorkers(t *testing.T) {
	ns := queuetest.Start(t)
	key := queuetest.KeyFile(t)
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
	natsArgs := func(seed string) []string {
		return []string{"--nats", ns.URL, "--nats-ca", ns.CA, "--nats-nkey", seed, "--nats-key-file", key}
	}
	var workers []*exec.Cmd
	var metrics []string
	metricsLine := regexp.MustCompile(`metrics on (http://\S+)/metrics`)
	for range 2 {
		w, sc := start(append(append([]string{"worker"}, natsArgs(ns.Worker)...), "--metrics", "127.0.0.1:0", "--dir", toolpacks, "--log-level", "error")...)
		for sc.Scan() && !strings.Contains(sc.Text(), "serving") {
			if m := metricsLine.FindStringSubmatch(sc.Text()); m != nil {
				metrics = append(metrics, m[1])
			}
		}
		go func() {
			for sc.Scan() {
			}
		}()
		workers = append(workers, w)
	}
	if len(metrics) != 2 {
		t.Fatalf("worker metrics at %v", metrics)
	}
	_, sc := start(append(append([]string{"serve", "--addr", "127.0.0.1:0"}, natsArgs(ns.Serve)...), "--dir", toolpacks, "--log-level", "error")...)
	base, token := serveBanner(t, sc)
	go func() {
		for sc.Scan() {
		}
	}()
	get := func(url, token string) string {
		req, _ := http.NewRequest("GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
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

	// A call forged by a NATS user without the key, as the tenant.
	intruder := ns.User(t, queuetest.Intruder, queuetest.IntruderPassword, nil)
	js, _ := jetstream.New(intruder)
	forged := nats.NewMsg("agenthost.calls.default")
	forged.Header.Set("Agenthost-Call-Id", "forged-1")
	forged.Header.Set("Agenthost-Tenant", "default")
	forged.Header.Set("Agenthost-Tool", "core:echo")
	forged.Data = []byte(`{"forged":true}`)
	if _, err := js.PublishMsg(context.Background(), forged); err != nil {
		t.Fatal(err)
	}
	const dropped = `agenthost_queue_rejected_total{message="call",reason="unsigned"} 1`
	for start := time.Now(); !strings.Contains(get(metrics[0]+"/metrics", "")+get(metrics[1]+"/metrics", ""), dropped); time.Sleep(50 * time.Millisecond) {
		if time.Since(start) > 15*time.Second {
			t.Fatalf("the forged call is not counted in a worker's /metrics:\n%s", get(metrics[0]+"/metrics", "")+get(metrics[1]+"/metrics", ""))
		}
	}
	if m := get(base+"/metrics", token); !strings.Contains(m, `agenthost_queue_rejected_total{message="result",reason="bad_signature"} 0`) {
		t.Fatalf("serve's /metrics lacks the queue's counter:\n%s", m)
	}

	workers[0].Process.Signal(syscall.SIGKILL)
	workers[0].Wait()
	for range 6 {
		if s, b := call(); s != 200 || !strings.Contains(b, `"via":"worker"`) {
			t.Fatalf("after a worker died: %d %s", s, b)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runUntil runs the CLI in this process until it exits, or until its
// stderr says until (then it is stopped): its exit code and stderr.
func runUntil(t *testing.T, until string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, strings.NewReader(""), io.Discard, &stderr) }()
	for {
		select {
		case code := <-done:
			return code, stderr.String()
		case <-time.After(20 * time.Millisecond):
			if until != "" && strings.Contains(stderr.String(), until) {
				cancel()
				return <-done, stderr.String()
			}
		}
	}
}

// startOpenNATS runs a nats-server with JetStream and users (when given)
// on loopback, in plain text.
func startOpenNATS(t *testing.T, users []*server.User) string {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true, Users: users})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(s.Shutdown)
	return s.ClientURL()
}

// TestNATSFlags_refused: worker and serve --nats refuse a server without
// authentication, a missing or short key, plain nats:// beyond loopback,
// credentials the server refuses and a certificate they cannot verify,
// each with a message that says what to configure.
func TestNATSFlags_refused(t *testing.T) {
	t.Setenv(envNATSKey, "")
	ns := queuetest.Start(t)
	open := startOpenNATS(t, nil)
	key := queuetest.KeyFile(t)
	short := filepath.Join(t.TempDir(), "short.key")
	os.WriteFile(short, []byte("0123456789abcdef"), 0o600)
	stranger := filepath.Join(t.TempDir(), "stranger.nk")
	kp, _ := nkeys.CreateUser()
	seed, _ := kp.Seed()
	os.WriteFile(stranger, seed, 0o600)
	toolpacks, _ := filepath.Abs("../../toolpacks")
	common := []string{"--dir", toolpacks, "--cache-dir", t.TempDir()}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"worker, an open server", []string{"worker", "--nats", open, "--nats-key-file", key},
			[]string{"lets clients in without credentials", "--nats-nkey FILE", "--nats-creds FILE", "AGENTHOST_NATS_PASSWORD", "docs/OPERATIONS.md", "--nats-insecure-test"}},
		{"serve, an open server", []string{"serve", "--addr", "127.0.0.1:0", "--nats", open, "--nats-key-file", key},
			[]string{"lets clients in without credentials", "--nats-insecure-test"}},
		{"no key", []string{"worker", "--nats", ns.URL, "--nats-ca", ns.CA, "--nats-nkey", ns.Worker},
			[]string{"--nats-key-file FILE", "$AGENTHOST_NATS_KEY", "openssl rand -hex 32"}},
		{"a short key", []string{"worker", "--nats", ns.URL, "--nats-ca", ns.CA, "--nats-nkey", ns.Worker, "--nats-key-file", short},
			[]string{"at least 32 random bytes", "has 8"}},
		{"nats:// beyond loopback", []string{"worker", "--nats", "nats://queue.example.com:4222", "--nats-key-file", key},
			[]string{"must be reached over TLS", "use tls://queue.example.com:4222", "--nats-ca FILE"}},
		{"an nkey the server does not know", []string{"serve", "--addr", "127.0.0.1:0", "--nats", ns.URL, "--nats-ca", ns.CA, "--nats-nkey", stranger, "--nats-key-file", key},
			[]string{"refused this process's credentials", "--nats-nkey " + stranger}},
		{"no credentials", []string{"worker", "--nats", ns.URL, "--nats-ca", ns.CA, "--nats-key-file", key},
			[]string{"refused this process's credentials (no credentials were given)"}},
		{"a certificate not trusted", []string{"worker", "--nats", ns.URL, "--nats-nkey", ns.Worker, "--nats-key-file", key},
			[]string{"--nats-ca FILE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr := runUntil(t, "serving", append(tc.args, common...)...)
			if code != 2 {
				t.Fatalf("exit %d, want 2:\n%s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// TestNATSFlags_allowed: --nats-insecure-test lets a worker use a server
// without authentication, loudly; a user and password come from the
// environment (or the URL, redacted in every message) and never show.
func TestNATSFlags_allowed(t *testing.T) {
	t.Setenv(envNATSKey, "")
	open := startOpenNATS(t, nil)
	const password = "pa55-w0rd-secret"
	withUsers := startOpenNATS(t, []*server.User{{Username: "worker", Password: password}})
	key := queuetest.KeyFile(t)
	toolpacks, _ := filepath.Abs("../../toolpacks")
	common := []string{"--dir", toolpacks, "--cache-dir", t.TempDir()}

	code, stderr := runUntil(t, "serving", append([]string{"worker", "--nats", open, "--nats-key-file", key, "--nats-insecure-test"}, common...)...)
	if code != 0 || !strings.Contains(stderr, "WARNING: --nats-insecure-test") || !strings.Contains(stderr, "serving") {
		t.Fatalf("insecure test: exit %d\n%s", code, stderr)
	}

	t.Setenv(envNATSUser, "worker")
	t.Setenv(envNATSPassword, password)
	code, stderr = runUntil(t, "serving", append([]string{"worker", "--nats", withUsers, "--nats-key-file", key}, common...)...)
	if code != 0 || !strings.Contains(stderr, "serving") || strings.Contains(stderr, password) {
		t.Fatalf("user and password from the environment: exit %d\n%s", code, stderr)
	}

	t.Setenv(envNATSUser, "")
	t.Setenv(envNATSPassword, "")
	t.Setenv(envNATSKey, strings.TrimSpace(string(must(os.ReadFile(key)))))
	inURL := strings.Replace(withUsers, "nats://", "nats://worker:"+password+"@", 1)
	code, stderr = runUntil(t, "serving", append([]string{"worker", "--nats", inURL}, common...)...)
	if code != 0 || !strings.Contains(stderr, "REDACTED@") || strings.Contains(stderr, password) {
		t.Fatalf("user and password in the URL, key from the environment: exit %d\n%s", code, stderr)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestWorkerDrain stops a worker process with SIGTERM while it runs a
// call that sleeps: with a drain timeout longer than the call, the call
// answers its real result; with one shorter, the call is cancelled and
// answers MAY_HAVE_RUN, never a plain CANCELLED. Either way the worker
// says it drains and exits 0 after the answer.
func TestWorkerDrain(t *testing.T) {
	ns := queuetest.Start(t)
	keyFile := queuetest.KeyFile(t)
	key, err := hex.DecodeString(strings.TrimSpace(string(must(os.ReadFile(keyFile)))))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "agenthost")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	pack := probePack(t)
	d, err := natsexec.NewDispatcher(context.Background(), ns.Connect(t, "serve"), natsexec.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	progress := make(chan *nats.Msg, 4)
	if _, err := ns.User(t, queuetest.Intruder, queuetest.IntruderPassword, nil).ChanSubscribe("agenthost.progress.>", progress); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, drain string
		sleepMS     int
		wantCode    abi.Code // "" for the call's own result
	}{
		{"the call finishes", "2m0s", 3000, ""},
		{"the drain timeout passes", "1s", 60000, abi.CodeMayHaveRun},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, "worker", "--nats", ns.URL, "--nats-ca", ns.CA, "--nats-nkey", ns.Worker, "--nats-key-file", keyFile,
				"--dir", pack, "--drain-timeout", tc.drain, "--log-level", "error")
			cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
			var stderr syncBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() { cmd.Process.Kill() })
			for !strings.Contains(stderr.String(), "serving") {
				select {
				case err := <-exited:
					t.Fatalf("the worker exited: %v\n%s", err, stderr.String())
				case <-time.After(20 * time.Millisecond):
				}
			}
			type answer struct {
				env abi.Envelope
				err error
			}
			answers := make(chan answer, 1)
			go func() {
				env, err := d.Call(context.Background(), "default", "t:probe", json.RawMessage(fmt.Sprintf(`{"ops":[{"op":"sleep","ms":%d}]}`, tc.sleepMS)))
				answers <- answer{env, err}
			}()
			if m := <-progress; !strings.Contains(string(m.Data), `"started"`) {
				t.Fatalf("progress %s", m.Data)
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			a := <-answers
			if a.err != nil {
				t.Fatalf("call: %v", a.err)
			}
			if tc.wantCode == "" {
				if a.env.Error != nil || !strings.Contains(string(a.env.Output), `"results":[{"ok":true}]`) {
					t.Fatalf("the call drained: %+v %s, want its result", a.env.Error, a.env.Output)
				}
			} else if a.env.Error == nil || a.env.Error.Code != tc.wantCode || !strings.Contains(a.env.Error.Message, "may have run") {
				t.Fatalf("the call cut by the drain timeout: %+v %s, want %s", a.env.Error, a.env.Output, tc.wantCode)
			}
			if err := <-exited; err != nil {
				t.Fatalf("the worker: %v\n%s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), "draining (up to "+tc.drain) {
				t.Errorf("the worker did not say it drains:\n%s", stderr.String())
			}
		})
	}
}

// probePack is a toolpack folder holding t:probe, the probe guest (its
// sleep operation makes a slow call), under a 2-minute timeout.
func probePack(t *testing.T) string {
	t.Helper()
	pack := t.TempDir()
	probe := exec.Command("go", "build", "-o", filepath.Join(pack, "probe.wasm"), "../../testdata/guests/goprobe")
	probe.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := probe.CombinedOutput(); err != nil {
		t.Fatalf("build the probe guest: %v\n%s", err, out)
	}
	manifest := `{"toolId":"t:probe","displayName":"Probe","description":"Runs probe operations (sleep).","version":"1.0.0",
	"handler":{"type":"wasm","abi":"wasi-command","module":"probe.wasm"},
	"securityContext":{"limits":{"timeoutMs":120000}}}`
	if err := os.WriteFile(filepath.Join(pack, "probe.tool.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return pack
}

// TestServeDrain stops serve with SIGTERM while a job sleeps: with a
// drain timeout longer than the call, the job ends done with the call's
// result and serve exits 0; with one shorter, the job ends interrupted
// with MAY_HAVE_RUN (never a CANCELLED that says it did not run) and
// serve exits 1. A synchronous call cut by the drain timeout is answered
// MAY_HAVE_RUN too, not with a reset connection.
func TestServeDrain(t *testing.T) {
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "agenthost")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	pack := probePack(t)
	for _, tc := range []struct {
		name, drain string
		sleepMS     int
		exit        int
		status      string
		sync        bool
	}{
		{"the job finishes", "2m0s", 3000, 0, store.JobDone, false},
		{"the drain timeout passes", "1s", 60000, 1, store.JobInterrupted, false},
		{"a synchronous call finishes", "2m0s", 3000, 0, "", true},
		{"a synchronous call past the drain timeout", "1s", 60000, 1, string(abi.CodeMayHaveRun), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", data, "--dir", pack, "--drain-timeout", tc.drain, "--log-level", "error")
			cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill() })
			sc := bufio.NewScanner(stderr)
			base, token := serveBanner(t, sc)
			var rest syncBuffer
			copied := make(chan struct{})
			go func() {
				for sc.Scan() {
					rest.Write([]byte(sc.Text() + "\n"))
				}
				close(copied)
			}()
			req, _ := http.NewRequest("POST", base+"/v1/tools/t:probe/call?async="+strconv.FormatBool(!tc.sync), strings.NewReader(fmt.Sprintf(`{"ops":[{"op":"sleep","ms":%d}]}`, tc.sleepMS)))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			if tc.sync {
				answer, code := syncDrain(t, req, base, token, cmd, &rest, copied)
				if code != tc.exit {
					t.Fatalf("serve exited %d, want %d:\n%s", code, tc.exit, rest.String())
				}
				if tc.status == "" && (answer.Error != nil || !strings.Contains(string(answer.Output), `"results":[{"ok":true}]`)) {
					t.Fatalf("the drained call answered %+v, want its result", answer)
				}
				if tc.status != "" && (answer.Error == nil || string(answer.Error.Code) != tc.status) {
					t.Fatalf("the cut call answered %+v, want %s", answer, tc.status)
				}
				return
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var j store.Job
			json.NewDecoder(resp.Body).Decode(&j)
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted || j.ID == "" {
				t.Fatalf("start: %d %+v", resp.StatusCode, j)
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			err = cmd.Wait()
			<-copied
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.exit || !strings.Contains(rest.String(), "draining (up to "+tc.drain) {
				t.Fatalf("serve exited %d, want %d:\n%s", code, tc.exit, rest.String())
			}
			st, err := store.Open(context.Background(), filepath.Join(data, "agenthost.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			got, err := st.Job(context.Background(), "default", j.ID)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case got.Status != tc.status:
				t.Fatalf("job %+v (error %+v), want %s", got, got.Error, tc.status)
			case tc.status == store.JobDone && (got.Result == nil || got.Result.Error != nil || !strings.Contains(string(got.Result.Output), `"results":[{"ok":true}]`)):
				t.Fatalf("the drained job's result %+v, want the call's", got.Result)
			case tc.status == store.JobInterrupted && (got.Error == nil || got.Error.Code != store.CodeMayHaveRun):
				t.Fatalf("the cut job's error %+v, want MAY_HAVE_RUN", got.Error)
			}
		})
	}
}

// syncDrain sends the synchronous call req to serve, sends SIGTERM once
// /metrics shows the call running, and returns the envelope serve
// answered (with 200) and serve's exit code.
func syncDrain(t *testing.T, req *http.Request, base, token string, cmd *exec.Cmd, rest *syncBuffer, copied chan struct{}) (abi.Envelope, int) {
	t.Helper()
	type answer struct {
		status int
		env    abi.Envelope
		err    error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		var a answer
		a.status, a.err = resp.StatusCode, json.NewDecoder(resp.Body).Decode(&a.env)
		got <- a
	}()
	for running := false; !running; {
		mreq, _ := http.NewRequest("GET", base+"/metrics", nil)
		mreq.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(mreq)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		running = strings.Contains(string(b), `agenthost_tool_calls_in_flight{tenant="default",tool="t:probe"} 1`)
		if !running {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	a := <-got
	code := 0
	if ee, ok := cmd.Wait().(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	<-copied
	if a.err != nil || a.status != http.StatusOK {
		t.Fatalf("the call in flight at SIGTERM: %d %v\n%s", a.status, a.err, rest.String())
	}
	return a.env, code
}
