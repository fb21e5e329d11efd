package script_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/internal/limitio"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/script"
)

// Scripts shared by the tests.
const (
	pyEcho = `import json, sys
json.dump({"echo": json.load(sys.stdin)}, sys.stdout)
`
	nodeEcho = `let s = "";
process.stdin.on("data", d => s += d);
process.stdin.on("end", () => process.stdout.write(JSON.stringify({echo: JSON.parse(s)})));
`
)

// fixture is one tool folder, its workspace and grant.
type fixture struct {
	tool  *manifest.Tool
	grant *policy.Grant
}

// newFixture writes code as the tool's script and returns a tool and a
// default grant: the whole workspace readable, nothing writable but
// $TMP, no network.
func newFixture(t *testing.T, lang, code string) *fixture {
	t.Helper()
	return newFixtureB(t, lang, code)
}

// newFixtureB is newFixture for tests and benchmarks.
func newFixtureB(t testing.TB, lang, code string) *fixture {
	t.Helper()
	dir := t.TempDir()
	name := "main.py"
	if lang != script.LangPython {
		name = "main.js"
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	return &fixture{
		tool: &manifest.Tool{ToolID: "test:tool", Version: "1.0.0", Dir: dir, Path: filepath.Join(dir, "t.tool.json"),
			Handler: manifest.Handler{Type: manifest.HandlerScript, ScriptPath: name, Language: lang}},
		grant: &policy.Grant{ToolID: "test:tool", Workspace: ws, ToolDir: dir,
			Read:   []policy.PathRule{{Root: policy.RootWorkspace, Pattern: "**"}},
			Limits: policy.Limits{Timeout: 20 * time.Second, MemoryBytes: 256 << 20, MaxOutputBytes: 1 << 20}},
	}
}

// hasCode reports whether err is set and has code c.
func hasCode(err *abi.Error, c abi.Code) bool { return err != nil && err.Code == c }

func newRunner(t *testing.T) *script.Runner {
	t.Helper()
	r, err := script.New(script.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// requireIsolation skips when this machine lacks kernel isolation (the
// tests below assert that it is enforced).
func requireIsolation(t *testing.T, r *script.Runner) {
	t.Helper()
	for _, p := range r.Protections() {
		if !p.Available && p.Name != "egress-proxy" {
			t.Skipf("kernel protection %s unavailable here: %s", p.Name, p.Detail)
		}
	}
}

// requireEgress skips where the egress proxy cannot run (a host that is
// not root); TestNetworkGrantRefusedWithoutEgress covers that case.
func requireEgress(t *testing.T, r *script.Runner) {
	t.Helper()
	requireIsolation(t, r)
	for _, p := range r.Protections() {
		if p.Name == "egress-proxy" && !p.Available {
			t.Skipf("egress proxy unavailable here: %s", p.Detail)
		}
	}
}

// requireOwnFS skips unless a Python script gets a file system of its
// own here: kernel isolation and a root host (per-call uids).
func requireOwnFS(t *testing.T, r *script.Runner) {
	t.Helper()
	requireIsolation(t, r)
	requireLang(t, script.LangPython)
	if os.Geteuid() != 0 {
		t.Skip("a file system of its own needs a root host (per-call uids)")
	}
}

func requireLang(t *testing.T, lang string) {
	t.Helper()
	prog := map[string]string{script.LangPython: "python3", script.LangNode: "node", script.LangBun: "bun"}[lang]
	if _, err := exec.LookPath(prog); err != nil {
		t.Skipf("%s not installed", prog)
	}
}

func prepare(t *testing.T, r *script.Runner, f *fixture) runner.Prepared {
	t.Helper()
	p, err := r.Prepare(context.Background(), f.tool, f.grant)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	return p
}

func call(t *testing.T, p runner.Prepared, input string) runner.Result {
	t.Helper()
	res, err := p.Run(context.Background(), runner.Request{Input: []byte(input)})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

// mustSucceed asserts that an echo call works: each adversarial case is
// followed by one.
func mustSucceed(t *testing.T, r *script.Runner, lang string) {
	t.Helper()
	code := pyEcho
	if lang != script.LangPython {
		code = nodeEcho
	}
	res := call(t, prepare(t, r, newFixture(t, lang, code)), `{"a":1}`)
	if res.Err != nil {
		t.Fatalf("follow-up call failed: %v\nlogs: %q", res.Err, res.Logs)
	}
	if string(res.Output) != `{"echo": {"a": 1}}` && string(res.Output) != `{"echo":{"a":1}}` {
		t.Fatalf("follow-up output %s", res.Output)
	}
}

func TestRunEcho(t *testing.T) {
	r := newRunner(t)
	requireIsolation(t, r)
	for _, tc := range []struct{ lang, code, want string }{
		{script.LangPython, pyEcho, `{"echo": {"x": "y"}}`},
		{script.LangNode, nodeEcho, `{"echo":{"x":"y"}}`},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			requireLang(t, tc.lang)
			res := call(t, prepare(t, r, newFixture(t, tc.lang, tc.code)), `{"x":"y"}`)
			if res.Err != nil {
				t.Fatalf("err %v, logs %q", res.Err, res.Logs)
			}
			if string(res.Output) != tc.want {
				t.Fatalf("output %s, want %s", res.Output, tc.want)
			}
			if res.Usage.MemoryBytes < 1<<20 || res.Usage.MemoryBytes > 256<<20 {
				t.Fatalf("usage.memoryBytes %d is not a plausible interpreter peak RSS", res.Usage.MemoryBytes)
			}
			if len(res.Logs) == 0 || !strings.HasPrefix(res.Logs[0], "isolation: applied landlock") {
				t.Fatalf("logs do not say which protections applied: %q", res.Logs)
			}
		})
	}
}

func TestRunToolError(t *testing.T) {
	r := newRunner(t)
	requireLang(t, script.LangPython)
	tests := []struct {
		name, code, wantMsg string
	}{
		{"error body", `import sys; print('{"error":{"code":"BAD","message":"no such city"}}'); sys.exit(3)`, "no such city"},
		{"plain exit", `import sys; sys.stderr.write("boom\n"); sys.exit(2)`, "status 2: boom"},
		{"exception", `raise ValueError("kaput")`, "ValueError: kaput"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, prepare(t, r, newFixture(t, script.LangPython, tc.code)), `{}`)
			if !hasCode(res.Err, abi.CodeToolError) || !strings.Contains(res.Err.Message, tc.wantMsg) {
				t.Fatalf("got %v, want TOOL_ERROR with %q", res.Err, tc.wantMsg)
			}
		})
	}
}

func TestRunEnvironment(t *testing.T) {
	r := newRunner(t)
	requireLang(t, script.LangPython)
	t.Setenv("AGENTHOST_TEST_SECRET", "hunter2")
	t.Setenv("AGENTHOST_TEST_GRANTED", "visible")
	f := newFixture(t, script.LangPython, `import json, os, sys; json.dump(dict(os.environ), sys.stdout)`)
	f.grant.Env = map[string]string{"AGENTHOST_TEST_GRANTED": "visible"}
	f.grant.EnvNames = []string{"AGENTHOST_TEST_GRANTED"}
	res := call(t, prepare(t, r, f), `{}`)
	if res.Err != nil {
		t.Fatalf("%v %q", res.Err, res.Logs)
	}
	var env map[string]string
	if err := json.Unmarshal(res.Output, &env); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(res.Output), "hunter2") {
		t.Fatalf("secret leaked: %s", res.Output)
	}
	want := []string{"AGENTHOST_TEST_GRANTED", "AGENTHOST_WORKSPACE", "HOME", "LANG", "PATH", "TMPDIR"}
	for _, k := range want {
		if _, ok := env[k]; !ok {
			t.Errorf("missing %s", k)
		}
	}
	if len(env) != len(want) {
		t.Errorf("environment has extra variables: %v", env)
	}
	if env["HOME"] != env["TMPDIR"] || env["PATH"] != "/usr/local/bin:/usr/bin:/bin" || env["LANG"] != "C.UTF-8" {
		t.Errorf("fixed variables wrong: %v", env)
	}
	if env["AGENTHOST_WORKSPACE"] != f.grant.Workspace {
		t.Errorf("AGENTHOST_WORKSPACE = %q", env["AGENTHOST_WORKSPACE"])
	}
	mustSucceed(t, r, script.LangPython)
}

func TestRunTmpIsFreshAndRemoved(t *testing.T) {
	r := newRunner(t)
	requireLang(t, script.LangPython)
	p := prepare(t, r, newFixture(t, script.LangPython, `import json, os, sys
before = os.listdir(".")
open("scratch.txt", "w").write("x")
json.dump({"cwd": os.getcwd(), "before": before}, sys.stdout)`))
	var dirs []string
	for i := 0; i < 2; i++ {
		res := call(t, p, `{}`)
		if res.Err != nil {
			t.Fatalf("%v %q", res.Err, res.Logs)
		}
		var out struct {
			Cwd    string   `json:"cwd"`
			Before []string `json:"before"`
		}
		if err := json.Unmarshal(res.Output, &out); err != nil {
			t.Fatal(err)
		}
		if len(out.Before) != 0 {
			t.Fatalf("$TMP not fresh: %v", out.Before)
		}
		if _, err := os.Stat(out.Cwd); !os.IsNotExist(err) {
			t.Fatalf("$TMP %s not removed: %v", out.Cwd, err)
		}
		dirs = append(dirs, out.Cwd)
	}
	if dirs[0] == dirs[1] {
		t.Fatal("two calls shared a $TMP")
	}
}

func TestFiles(t *testing.T) {
	r := newRunner(t)
	requireIsolation(t, r)
	requireLang(t, script.LangPython)
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("private"), 0o644); err != nil {
		t.Fatal(err)
	}
	code := `import json, sys
a = json.load(sys.stdin)
try:
    if a["op"] == "read":
        print(json.dumps(open(a["path"]).read()))
    else:
        open(a["path"], "w").write("written")
        print("true")
except PermissionError as e:
    print(json.dumps({"error": {"code": "EACCES", "message": str(e)}}))
    sys.exit(1)
`
	f := newFixture(t, script.LangPython, code)
	ws := f.grant.Workspace
	workspaceDirs(t, ws, "data", "secret", "out")
	f.grant.Read = []policy.PathRule{{Root: policy.RootWorkspace, Pattern: "data/**"}}
	f.grant.Write = []policy.PathRule{{Root: policy.RootWorkspace, Pattern: "out/**"}}
	p := prepare(t, r, f)
	tests := []struct {
		name, op, path string
		ok             bool
	}{
		{"read granted", "read", filepath.Join(ws, "data", "f.txt"), true},
		{"read shadow", "read", "/etc/shadow", false},
		{"read outside workspace", "read", outside, false},
		{"read ungranted workspace dir", "read", filepath.Join(ws, "secret", "f.txt"), false},
		{"read tool dir", "read", filepath.Join(f.tool.Dir, "main.py"), true},
		{"read host environ via proc", "read", "/proc/1/environ", false},
		{"read own environ via proc", "read", "/proc/self/environ", false},
		{"write granted", "write", filepath.Join(ws, "out", "new.txt"), true},
		{"write read-only grant", "write", filepath.Join(ws, "data", "f.txt"), false},
		{"write tool dir", "write", filepath.Join(f.tool.Dir, "main.py"), false},
		{"write host tmp", "write", filepath.Join(os.TempDir(), "agenthost-escape.txt"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := json.Marshal(map[string]string{"op": tc.op, "path": tc.path})
			res := call(t, p, string(in))
			if tc.ok && res.Err != nil {
				t.Fatalf("want success, got %v %q", res.Err, res.Logs)
			}
			if !tc.ok && (!hasCode(res.Err, abi.CodePermissionDenied) || !strings.Contains(res.Err.Message, "Permission denied")) {
				t.Fatalf("want PERMISSION_DENIED, got %v output %s", res.Err, res.Output)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "data", "f.txt")); string(b) != "data" {
		t.Fatalf("read-only file changed: %q", b)
	}
	mustSucceed(t, r, script.LangPython)
}

func TestNetworkDenied(t *testing.T) {
	r := newRunner(t)
	requireIsolation(t, r)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	tests := []struct{ lang, code string }{
		{script.LangPython, fmt.Sprintf(`import socket, json
try:
    socket.create_connection(("127.0.0.1", %d), timeout=2)
    print(json.dumps("connected"))
except OSError as e:
    print(json.dumps("refused: " + str(e)))
`, port)},
		{script.LangNode, fmt.Sprintf(`const s = require("net").connect(%d, "127.0.0.1");
s.on("connect", () => { console.log(JSON.stringify("connected")); s.end(); });
s.on("error", e => console.log(JSON.stringify("refused: " + e.message)));
`, port)},
	}
	for _, tc := range tests {
		t.Run(tc.lang, func(t *testing.T) {
			requireLang(t, tc.lang)
			res := call(t, prepare(t, r, newFixture(t, tc.lang, tc.code)), `{}`)
			if res.Err != nil || !strings.HasPrefix(string(res.Output), `"refused`) {
				t.Fatalf("want a refused connect, got %v %s %q", res.Err, res.Output, res.Logs)
			}
			mustSucceed(t, r, tc.lang)
		})
	}
	if err := ln.(*net.TCPListener).SetDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Fatal("a connection from the sandbox arrived at the loopback listener")
	}
}

func TestNetworkAllowlist(t *testing.T) {
	r := newRunner(t)
	requireEgress(t, r)
	requireLang(t, script.LangPython)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "hello from the allowed host")
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	code := `import json, socket, sys, urllib.request
a = json.load(sys.stdin)
if a["mode"] == "direct":
    try:
        socket.create_connection(("127.0.0.1", a["port"]), timeout=2)
        print(json.dumps("connected"))
    except OSError as e:
        print(json.dumps("refused: " + str(e)))
else:
    print(json.dumps(urllib.request.urlopen(a["url"], timeout=5).read().decode()))
`
	f := newFixture(t, script.LangPython, code)
	f.grant.Hosts = []policy.HostRule{{Scheme: "http", Host: "127.0.0.1", Port: port}}
	f.grant.AllowPrivate = true
	p := prepare(t, r, f)
	run := func(in map[string]any) runner.Result {
		b, _ := json.Marshal(in)
		return call(t, p, string(b))
	}
	res := run(map[string]any{"mode": "proxy", "url": srv.URL + "/x"})
	if res.Err != nil || string(res.Output) != "\"hello from the allowed host\"\n" {
		t.Fatalf("allowed host through the proxy: %v %q %q", res.Err, res.Output, res.Logs)
	}
	res = run(map[string]any{"mode": "proxy", "url": fmt.Sprintf("http://127.0.0.2:%d/", port)})
	if !hasCode(res.Err, abi.CodePermissionDenied) || !strings.Contains(res.Err.Message, "127.0.0.2") {
		t.Fatalf("host outside the allowlist: want PERMISSION_DENIED naming it, got %v %q", res.Err, res.Logs)
	}
	res = run(map[string]any{"mode": "direct", "port": port})
	if res.Err != nil || !strings.HasPrefix(string(res.Output), `"refused`) {
		t.Fatalf("direct connect bypassing the proxy: %v %s", res.Err, res.Output)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("the server saw %d requests, want only the allowed one", n)
	}
}

func TestNetworkGrantRefusedWithoutEgress(t *testing.T) {
	r := newRunner(t)
	requireLang(t, script.LangPython)
	defer script.SimulateNoEgress(r)()
	f := newFixture(t, script.LangPython, pyEcho)
	f.grant.Hosts = []policy.HostRule{{Host: "api.example.com"}}
	f.grant.AllowDegraded = true // degraded isolation never means an unfiltered network
	_, err := r.Prepare(context.Background(), f.tool, f.grant)
	if !errors.Is(err, abi.ErrPermissionDenied) || !strings.Contains(err.Error(), "allowlist") {
		t.Fatalf("want PERMISSION_DENIED about the allowlist, got %v", err)
	}
}

func TestNetworkAllowlistPrivateRefused(t *testing.T) {
	r := newRunner(t)
	requireEgress(t, r)
	requireLang(t, script.LangPython)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { hits.Add(1) }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	f := newFixture(t, script.LangPython, `import json, sys, urllib.request
print(json.dumps(urllib.request.urlopen(json.load(sys.stdin)["url"], timeout=5).read().decode()))`)
	// Allowlisted, but loopback without allowPrivateAddresses.
	f.grant.Hosts = []policy.HostRule{{Scheme: "http", Host: "127.0.0.1", Port: port}}
	res := call(t, prepare(t, r, f), fmt.Sprintf(`{"url":%q}`, srv.URL))
	if !hasCode(res.Err, abi.CodePermissionDenied) || hits.Load() != 0 {
		t.Fatalf("want PERMISSION_DENIED and no request, got %v, %d requests", res.Err, hits.Load())
	}
	mustSucceed(t, r, script.LangPython)
}

func TestForkBomb(t *testing.T) {
	r := newRunner(t)
	requireIsolation(t, r)
	requireLang(t, script.LangPython)
	f := newFixture(t, script.LangPython, `import os
while True:
    try:
        os.fork()
    except OSError:
        pass
`)
	f.grant.Limits.Timeout = 2 * time.Second
	res := call(t, prepare(t, r, f), `{}`)
	if res.Err == nil {
		t.Fatal("fork bomb succeeded")
	}
	mustSucceed(t, r, script.LangPython)
}

// processesWith lists host processes whose command line contains token
// (safe to call from any goroutine; an unreadable /proc lists none,
// which the caller's "seen running" check catches).
func processesWith(token string) []string {
	ents, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), token) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

func TestTimeoutKillsDescendants(t *testing.T) {
	r := newRunner(t)
	requireIsolation(t, r)
	requireLang(t, script.LangPython)
	token := fmt.Sprintf("%d.%d", 900+os.Getpid()%97, time.Now().UnixNano()%1000)
	f := newFixture(t, script.LangPython, fmt.Sprintf(`import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/usr/bin/sleep", ["sleep", "%s"])
    os._exit(0)
time.sleep(600)
`, token))
	f.grant.Limits.Timeout = 2 * time.Second
	p := prepare(t, r, f)
	// Watch for the grandchild while the call runs, so the test cannot
	// pass because it never started.
	seen := make(chan bool, 1)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				seen <- false
				return
			case <-time.After(20 * time.Millisecond):
				if len(processesWith(token)) > 0 {
					seen <- true
					return
				}
			}
		}
	}()
	res := call(t, p, `{}`)
	close(stop)
	if !<-seen {
		t.Fatal("the detached grandchild was never seen running")
	}
	if !hasCode(res.Err, abi.CodeTimeout) {
		t.Fatalf("want TIMEOUT, got %v %q", res.Err, res.Logs)
	}
	if pids := processesWith(token); len(pids) > 0 {
		t.Fatalf("processes survived the timeout: %v", pids)
	}
	mustSucceed(t, r, script.LangPython)
}

func TestOutputLimit(t *testing.T) {
	r := newRunner(t)
	requireLang(t, script.LangPython)
	f := newFixture(t, script.LangPython, `import sys
chunk = "x" * (1 << 20)
for _ in range(50):
    sys.stdout.write(chunk)
`)
	res := call(t, prepare(t, r, f), `{}`)
	if !hasCode(res.Err, abi.CodeOutputLimit) {
		t.Fatalf("want OUTPUT_LIMIT, got %v", res.Err)
	}
	if len(res.Output) != 0 {
		t.Fatalf("a failed call kept %d output bytes", len(res.Output))
	}
	mustSucceed(t, r, script.LangPython)
}

func TestLogsCapped(t *testing.T) {
	r := newRunner(t)
	requireLang(t, script.LangPython)
	f := newFixture(t, script.LangPython, `import sys
for i in range(20000):
    sys.stderr.write("log line %d\n" % i)
print("1")
`)
	res := call(t, prepare(t, r, f), `{}`)
	if res.Err != nil {
		t.Fatalf("%v", res.Err)
	}
	total := 0
	for _, l := range res.Logs {
		total += len(l)
	}
	if total > limitio.DefaultLogBytes+len(limitio.TruncatedMarker) || !strings.HasSuffix(res.Logs[len(res.Logs)-1], limitio.TruncatedMarker) {
		t.Fatalf("logs not capped with a marker: %d bytes, last %q", total, res.Logs[len(res.Logs)-1])
	}
}

func TestMemoryLimit(t *testing.T) {
	r := newRunner(t)
	requireIsolation(t, r)
	for _, tc := range []struct{ lang, code string }{
		{script.LangPython, `x = bytearray(512 << 20)`},
		{script.LangNode, `const a = []; for (;;) a.push(new Array(1e6).fill(1.5));`},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			requireLang(t, tc.lang)
			f := newFixture(t, tc.lang, tc.code)
			f.grant.Limits.MemoryBytes = 64 << 20
			res := call(t, prepare(t, r, f), `{}`)
			if !hasCode(res.Err, abi.CodeMemoryLimit) {
				t.Fatalf("want MEMORY_LIMIT, got %v %q", res.Err, res.Logs)
			}
			mustSucceed(t, r, tc.lang)
		})
	}
}

func TestScriptPathEscapes(t *testing.T) {
	r := newRunner(t)
	requireLang(t, script.LangPython)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "evil.py"), []byte(pyEcho), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, path string }{
		{"dotdot", "../evil.py"},
		{"nested dotdot", "sub/../../evil.py"},
		{"absolute", filepath.Join(outside, "evil.py")},
		{"symlink out", "link.py"},
		{"missing", "nope.py"},
		{"empty", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, script.LangPython, pyEcho)
			if err := os.Symlink(filepath.Join(outside, "evil.py"), filepath.Join(f.tool.Dir, "link.py")); err != nil {
				t.Fatal(err)
			}
			f.tool.Handler.ScriptPath = tc.path
			_, err := r.Prepare(context.Background(), f.tool, f.grant)
			if !errors.Is(err, abi.ErrLoadError) {
				t.Fatalf("want LOAD_ERROR, got %v", err)
			}
		})
	}
	mustSucceed(t, r, script.LangPython)
}

func TestScriptPathInside(t *testing.T) {
	r := newRunner(t)
	requireLang(t, script.LangPython)
	f := newFixture(t, script.LangPython, pyEcho)
	if err := os.MkdirAll(filepath.Join(f.tool.Dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A symlink that stays inside the folder, into a subfolder, is fine.
	if err := os.Symlink(filepath.Join(f.tool.Dir, "main.py"), filepath.Join(f.tool.Dir, "src", "entry.py")); err != nil {
		t.Fatal(err)
	}
	f.tool.Handler.ScriptPath = "src/entry.py"
	res := call(t, prepare(t, r, f), `{"k":"v"}`)
	if res.Err != nil || string(res.Output) != `{"echo": {"k": "v"}}` {
		t.Fatalf("%v %s", res.Err, res.Output)
	}
}

func TestPrepareRejects(t *testing.T) {
	r := newRunner(t)
	requireLang(t, script.LangPython)
	tests := []struct {
		name   string
		modify func(f *fixture)
		want   error
	}{
		{"wrong handler", func(f *fixture) { f.tool.Handler.Type = manifest.HandlerWasm }, abi.ErrLoadError},
		{"unknown language", func(f *fixture) { f.tool.Handler.Language = "ruby" }, abi.ErrLoadError},
		{"mounts", func(f *fixture) { f.grant.Mounts = []policy.Mount{{GuestPath: "/mnt", Folder: "data"}} }, abi.ErrLoadError},
		{"denied", func(f *fixture) { f.grant.Denied = true }, abi.ErrPermissionDenied},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, script.LangPython, pyEcho)
			tc.modify(f)
			if _, err := r.Prepare(context.Background(), f.tool, f.grant); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestDegraded(t *testing.T) {
	r := newRunner(t)
	requireLang(t, script.LangPython)
	reset := script.SimulateNoLandlock(r)
	defer reset()
	f := newFixture(t, script.LangPython, pyEcho)
	if _, err := r.Prepare(context.Background(), f.tool, f.grant); !errors.Is(err, abi.ErrPermissionDenied) || !strings.Contains(err.Error(), "landlock") {
		t.Fatalf("without Landlock and allowDegraded: got %v, want PERMISSION_DENIED naming landlock", err)
	}
	f.grant.AllowDegraded = true
	res := call(t, prepare(t, r, f), `{"a":1}`)
	if res.Err != nil {
		t.Fatalf("%v %q", res.Err, res.Logs)
	}
	if !strings.Contains(res.Logs[0], "DEGRADED") || !strings.Contains(res.Logs[0], "landlock") {
		t.Fatalf("logs do not report the degraded isolation: %q", res.Logs)
	}
}

func TestProtections(t *testing.T) {
	ps := script.Protections()
	if len(ps) < 6 {
		t.Fatalf("want at least 6 protections, got %v", ps)
	}
	for _, p := range ps {
		if p.Name == "" || p.Detail == "" {
			t.Errorf("incomplete protection %+v", p)
		}
	}
}

func TestSignalsContained(t *testing.T) {
	r := newRunner(t)
	requireIsolation(t, r)
	requireLang(t, script.LangPython)
	// kill(-1) reaches every process the caller may signal: in the
	// sandbox that is only its own namespace.
	f := newFixture(t, script.LangPython, `import os, signal, json
try:
    os.kill(-1, signal.SIGKILL)
except OSError as e:
    print(json.dumps(str(e)))
`)
	res := call(t, prepare(t, r, f), `{}`)
	if res.Err != nil {
		t.Fatalf("kill(-1) in the sandbox: %v %q", res.Err, res.Logs)
	}
	mustSucceed(t, r, script.LangPython)
}

func TestConcurrentCalls(t *testing.T) {
	r := newRunner(t)
	requireLang(t, script.LangPython)
	p := prepare(t, r, newFixture(t, script.LangPython, pyEcho))
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func() {
			in := fmt.Sprintf(`{"i":%d}`, i)
			res, err := p.Run(context.Background(), runner.Request{Input: []byte(in)})
			switch {
			case err != nil:
				errs <- err
			case res.Err != nil:
				errs <- res.Err
			case string(res.Output) != fmt.Sprintf(`{"echo": {"i": %d}}`, i):
				errs <- fmt.Errorf("call %d got %s", i, res.Output)
			default:
				errs <- nil
			}
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestRunHidesHostPaths pins that a script's error and logs name no host
// folder outside the tool's own: the call's scratch folder and the
// workspace become $TMP and $WORKSPACE (they leaked in tracebacks).
func TestRunHidesHostPaths(t *testing.T) {
	r := newRunner(t)
	requireLang(t, script.LangPython)
	code := `import os, sys
tmp = os.getcwd()
ws = os.environ.get("AGENTHOST_WORKSPACE", "")
sys.stderr.write("scratch at " + tmp + "\n")
raise FileNotFoundError(os.path.join(ws, "missing.csv"))`
	f := newFixture(t, script.LangPython, code)
	res := call(t, prepare(t, r, f), `{}`)
	if res.Err == nil {
		t.Fatal("the script did not fail")
	}
	text := res.Err.Message + "\n" + strings.Join(res.Logs, "\n")
	if ws := f.grant.Workspace; ws != "" && strings.Contains(strings.ReplaceAll(text, f.tool.Dir, ""), ws) {
		t.Errorf("the workspace path %s leaks:\n%s", ws, text)
	}
	if !strings.Contains(text, "$WORKSPACE/missing.csv") || !strings.Contains(text, "scratch at $TMP") {
		t.Errorf("paths not rewritten to $WORKSPACE / $TMP:\n%s", text)
	}
}

// TestRunPrivateTMPDIR pins that script calls work whatever TMPDIR looks
// like: with TMPDIR a 0700 folder (what mktemp -d gives, and what CI
// runners set) every call failed INTERNAL "fork/exec /usr/bin/prlimit:
// permission denied", because the per-call user could not reach its $TMP.
func TestRunPrivateTMPDIR(t *testing.T) {
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", private)
	r := newRunner(t)
	requireIsolation(t, r)
	requireLang(t, script.LangPython)
	res := call(t, prepare(t, r, newFixture(t, script.LangPython, pyEcho)), `{"a":1}`)
	if res.Err != nil {
		t.Fatalf("call under a private TMPDIR: %v\nlogs %q", res.Err, res.Logs)
	}
}

// TestTmpInMemory fills a call's $TMP with one big file and with many
// empty ones: on a root host $TMP is a tmpfs of the call's memory limit,
// so the writes stop with ENOSPC near that size (or the inode limit),
// the logs say $TMP was full, and nothing reached the host's disk.
func TestTmpInMemory(t *testing.T) {
	r := newRunner(t)
	requireOwnFS(t, r)
	const limit = 32 << 20
	for _, tc := range []struct{ name, code string }{
		{"one big file", `import errno, json, os
n = 0
try:
    with open("fill", "wb") as f:
        while True:
            f.write(b"x" * (1 << 20))
            f.flush()
            n += 1 << 20
except OSError as e:
    json.dump({"bytes": n, "errno": e.errno, "cwd": os.getcwd()}, __import__("sys").stdout)
`},
		{"many files", `import errno, json, os
n = 0
try:
    while True:
        open("f%d" % n, "wb").close()
        n += 1
except OSError as e:
    json.dump({"files": n, "errno": e.errno, "cwd": os.getcwd()}, __import__("sys").stdout)
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, script.LangPython, tc.code)
			f.grant.Limits.MemoryBytes = limit
			res := call(t, prepare(t, r, f), `{}`)
			if res.Err != nil {
				t.Fatalf("%v %q", res.Err, res.Logs)
			}
			var out struct {
				Bytes, Files, Errno int
				Cwd                 string
			}
			if err := json.Unmarshal(res.Output, &out); err != nil {
				t.Fatalf("%v: %s", err, res.Output)
			}
			if out.Errno != int(syscall.ENOSPC) {
				t.Fatalf("the fill stopped with errno %d, want ENOSPC: %+v", out.Errno, out)
			}
			if out.Bytes > limit || out.Files > limit/(16<<10) {
				t.Fatalf("$TMP held more than its limit: %+v", out)
			}
			if out.Bytes == 0 && out.Files == 0 {
				t.Fatalf("nothing was written: %+v", out)
			}
			if !strings.Contains(strings.Join(res.Logs, "\n"), "denied: write $TMP: full") {
				t.Fatalf("logs do not say $TMP was full: %q", res.Logs)
			}
			if _, err := os.Stat(out.Cwd); !os.IsNotExist(err) {
				t.Fatalf("$TMP %s left on the host: %v", out.Cwd, err)
			}
			mustSucceed(t, r, script.LangPython)
		})
	}
}

// TestOwnFileSystem pins the script's file system of its own (a private
// mount namespace holding only the interpreter's folders, the tool folder,
// the granted workspace paths, $CACHE and $TMP): a script could connect
// to a unix socket anywhere, stat and readlink any host path, and change
// the times or attributes of files it could only read or not see at all.
func TestOwnFileSystem(t *testing.T) {
	r := newRunner(t)
	requireOwnFS(t, r)
	code := `import json, os, socket, sys
a = json.load(sys.stdin)
op, p = a["op"], a["path"]
try:
    if op == "connect":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(p)
        s.send(b"leak")
    elif op == "stat":
        os.stat(p)
    elif op == "readlink":
        os.readlink(p)
    elif op == "listdir":
        os.listdir(p)
    elif op == "utime":
        os.utime(p)
    elif op == "chmod":
        os.chmod(p, 0o777)
    elif op == "setxattr":
        os.setxattr(p, "user.agenthost", b"x")
    elif op == "rename":
        os.rename(p, a["to"])
    print("true")
except OSError as e:
    print(json.dumps({"error": {"code": "OS", "message": repr(e)}}))
    sys.exit(1)
`
	f := newFixture(t, script.LangPython, code)
	ws := f.grant.Workspace
	workspaceDirs(t, ws, "data", "secret", "out")
	f.grant.Read = []policy.PathRule{{Root: policy.RootWorkspace, Pattern: "data/**"}, {Root: policy.RootWorkspace, Pattern: "out/**"}}
	f.grant.Write = []policy.PathRule{{Root: policy.RootWorkspace, Pattern: "out/**"}}
	// A unix socket outside the grant, as a docker.sock would be.
	sockDir := t.TempDir()
	sock := filepath.Join(sockDir, "host.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		b := make([]byte, 16)
		n, _ := c.Read(b)
		got <- string(b[:n])
		c.Close()
	}()
	if err := os.Symlink("/etc/shadow", filepath.Join(sockDir, "link")); err != nil {
		t.Fatal(err)
	}
	p := prepare(t, r, f)
	tests := []struct {
		name, op, path, to string
	}{
		{"connect to a host unix socket", "connect", sock, ""},
		{"stat a host path", "stat", "/etc/shadow", ""},
		{"stat outside the grant", "stat", filepath.Join(ws, "secret", "f.txt"), ""},
		{"readlink a host link", "readlink", filepath.Join(sockDir, "link"), ""},
		{"list a host folder", "listdir", "/root", ""},
		{"utime a read-only file", "utime", filepath.Join(ws, "data", "f.txt"), ""},
		{"chmod a read-only file", "chmod", filepath.Join(ws, "data", "f.txt"), ""},
		{"setxattr a read-only file", "setxattr", filepath.Join(ws, "data", "f.txt"), ""},
		{"utime an invisible file", "utime", filepath.Join(ws, "secret", "f.txt"), ""},
		{"rename an ungranted folder into a readable place", "rename", filepath.Join(ws, "secret"), filepath.Join(ws, "out", "secret")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := json.Marshal(map[string]string{"op": tc.op, "path": tc.path, "to": tc.to})
			res := call(t, p, string(in))
			if res.Err == nil {
				t.Fatalf("%s %s succeeded: %s", tc.op, tc.path, res.Output)
			}
		})
	}
	select {
	case s := <-got:
		t.Fatalf("the host's unix socket received %q", s)
	default:
	}
	if _, err := os.Stat(filepath.Join(ws, "secret", "f.txt")); err != nil {
		t.Fatalf("the ungranted folder moved: %v", err)
	}
	// A granted write still works.
	in, _ := json.Marshal(map[string]string{"op": "utime", "path": filepath.Join(ws, "out", "f.txt")})
	if res := call(t, p, string(in)); res.Err != nil {
		t.Fatalf("utime of a writable file: %v", res.Err)
	}
}

// TestSyscallFilter pins the seccomp filter: what namespaces and Landlock
// leave open is refused (a new user namespace, mounts, ptrace, the kernel
// keyring, bpf, userfaultfd, perf events), and the script still runs.
func TestSyscallFilter(t *testing.T) {
	r := newRunner(t)
	requireIsolation(t, r)
	requireLang(t, script.LangPython)
	on := false
	for _, p := range r.Protections() {
		on = on || (p.Name == "seccomp" && p.Available)
	}
	if !on {
		t.Skip("no seccomp filter on this architecture")
	}
	// Raw syscalls through ctypes, so no libc wrapper hides the result;
	// numbers are x86-64's (the filter's only table today).
	code := `import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
nr = {"unshare_user": (272, [0x10000000]), "unshare_mount": (272, [0x00020000]),
      "mount": (165, [0, 0, 0, 0, 0]), "ptrace": (101, [16, 1, 0, 0]),
      "keyctl": (250, [0, 0, 0, 0]), "bpf": (321, [0, 0, 0]),
      "userfaultfd": (323, [0]), "perf_event_open": (298, [0, 0, 0, 0, 0]),
      "clone_newuser": (56, [0x10000000 | 17, 0, 0, 0, 0])}
a = json.load(sys.stdin)
n, args = nr[a["op"]]
r = libc.syscall(n, *args)
e = ctypes.get_errno()
if r == 0 and a["op"] == "clone_newuser":
    os._exit(0)  # the child of a clone that went through
print(json.dumps({"ret": r, "errno": e}))
`
	p := prepare(t, r, newFixture(t, script.LangPython, code))
	for _, op := range []string{"unshare_user", "unshare_mount", "mount", "ptrace", "keyctl", "bpf", "userfaultfd", "perf_event_open", "clone_newuser"} {
		t.Run(op, func(t *testing.T) {
			res := call(t, p, `{"op":"`+op+`"}`)
			if res.Err != nil {
				t.Fatalf("%v %q", res.Err, res.Logs)
			}
			var got struct{ Ret, Errno int }
			if err := json.Unmarshal(res.Output, &got); err != nil {
				t.Fatalf("%v: %s", err, res.Output)
			}
			if got.Ret != -1 || got.Errno != int(syscall.EPERM) {
				t.Fatalf("%s returned %d (errno %d), want -1 EPERM", op, got.Ret, got.Errno)
			}
		})
	}
	mustSucceed(t, r, script.LangPython)
}

// TestNoCapabilities pins that a script runs with no capability at all
// (it kept CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH as ambient
// capabilities): the host's root-owned files it may read are mounted
// idmapped, so they appear owned by the call's uid, and it still reads a
// granted file in a 0700 workspace.
func TestNoCapabilities(t *testing.T) {
	r := newRunner(t)
	requireOwnFS(t, r)
	code := `import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
amb = [libc.prctl(47, 1, c, 0, 0) for c in (1, 2)]  # PR_CAP_AMBIENT_IS_SET: DAC_OVERRIDE, DAC_READ_SEARCH
print(json.dumps({"uid": os.getuid(), "ambient": amb, "data": open(sys.argv[0].rsplit("/", 1)[0] + "/main.py").read()[:6],
                  "ws": open(os.environ["AGENTHOST_WORKSPACE"] + "/data/f.txt").read()}))
`
	f := newFixture(t, script.LangPython, code)
	ws := f.grant.Workspace
	if err := os.Chmod(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "data", "f.txt"), []byte("granted"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.grant.Read = []policy.PathRule{{Root: policy.RootWorkspace, Pattern: "data/**"}}
	res := call(t, prepare(t, r, f), `{}`)
	if res.Err != nil {
		t.Fatalf("%v %q", res.Err, res.Logs)
	}
	var got struct {
		UID     int    `json:"uid"`
		Ambient []int  `json:"ambient"`
		WS      string `json:"ws"`
	}
	if err := json.Unmarshal(res.Output, &got); err != nil {
		t.Fatalf("%v: %s", err, res.Output)
	}
	if got.UID == 0 || got.Ambient[0] != 0 || got.Ambient[1] != 0 {
		t.Fatalf("uid %d with ambient capabilities %v, want a non-root uid with none", got.UID, got.Ambient)
	}
	if got.WS != "granted" {
		t.Fatalf("the granted file read %q", got.WS)
	}
}

// workspaceDirs makes each folder in ws with a file f.txt holding its name.
func workspaceDirs(t *testing.T, ws string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, d, "f.txt"), []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
