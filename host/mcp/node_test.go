package mcp_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/mcp"
)

// node returns the node binary and checks the npm packages of
// testdata/node are installed; CI must have both.
func node(t *testing.T) string {
	t.Helper()
	n, err := exec.LookPath("node")
	_, modErr := os.Stat("testdata/node/node_modules/@modelcontextprotocol/sdk")
	if err != nil || modErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node or the npm packages are missing (.ci/run runs npm ci in host/mcp/testdata/node): %v %v", err, modErr)
		}
		t.Skip("node or the npm packages are not installed (npm ci in host/mcp/testdata/node)")
	}
	return n
}

// node22 returns the node 22 of testdata/node (an npm package: the
// conformance suite and the Inspector need node 22), under the same
// rules as node.
func node22(t *testing.T) string {
	t.Helper()
	node(t)
	n, err := filepath.Abs("testdata/node/node_modules/.bin/node")
	if _, statErr := os.Stat(n); err != nil || statErr != nil {
		t.Fatalf("node 22 is missing from testdata/node (npm ci there): %v %v", err, statErr)
	}
	return n
}

// conformanceRuns are the conformance suite's runs against a tools
// server: each revision's scenarios that apply to one, and the tasks
// extension's. The others need the reference server's fixtures (tools,
// prompts and resources by fixed names: test_simple_text, slow_compute,
// test_prompt_with_arguments, …; our tools are the catalogue, named
// namespace__name), or features this server does not offer (completion,
// resource subscriptions, sampling, elicitation and roots by
// input_required, SSE polling); docs/MCP.md lists them with the reasons.
var conformanceRuns = []struct {
	name       string
	args       []string
	applicable []string
}{
	{"2025-11-25", []string{"--requirements", "2025-11-25"}, []string{"server-initialize", "server-session-lifecycle", "logging-set-level", "ping",
		"tools-list", "server-sse-multiple-streams", "resources-list", "prompts-list", "dns-rebinding-protection"}},
	{"2026-07-28", []string{"--requirements", "2026-07-28"}, []string{"server-stateless", "tools-list", "server-sse-multiple-streams", "resources-list",
		"prompts-list", "dns-rebinding-protection", "caching", "http-header-validation", "http-custom-header-server-validation", "sep-2164-resource-not-found",
		"input-required-result-unsupported-methods", "input-required-result-validate-input"}},
	{"tasks-capability-negotiation", []string{"--scenario", "tasks-capability-negotiation"}, []string{"tasks-capability-negotiation"}},
	{"tasks-request-headers", []string{"--scenario", "tasks-request-headers"}, []string{"tasks-request-headers"}},
	{"tasks-dispatch-and-envelope", []string{"--scenario", "tasks-dispatch-and-envelope"}, []string{"tasks-dispatch-and-envelope"}},
}

// fixtureChecks are the checks of applicable scenarios that exercise a
// fixture tool of the reference server (they fail here, "not testable"
// or "unknown tool"), by the tool they need.
var fixtureChecks = map[string]string{
	"sep-2575-server-rejects-undeclared-capability":            "test_missing_capability",
	"sep-2575-missing-capability-http-400":                     "test_missing_capability",
	"sep-2575-http-server-no-independent-requests-on-stream":   "test_streaming_elicitation",
	"sep-2575-server-no-log-without-loglevel":                  "test_logging_tool",
	"sep-2243-server-no-xmcp-tool":                             "a tool with x-mcp-header",
	"sep-2243-server-decode-base64":                            "a tool with x-mcp-header",
	"sep-2243-server-validate-param-match":                     "a tool with x-mcp-header",
	"sep-2243-server-reject-invalid-param-chars":               "a tool with x-mcp-header",
	"sep-2243-server-reject-param-mismatch":                    "a tool with x-mcp-header",
	"sep-2663-server-rejects-undeclared-client":                "slow_compute",
	"tasks-per-request-meta-opt-in":                            "slow_compute",
	"tasks-headers-tolerate-mcp-method-on-tools-call":          "greet",
	"sep-2663-routing-headers-accepted-on-tasks-get":           "slow_compute",
	"sep-2663-server-rejects-mismatched-mcp-name-on-tasks-get": "slow_compute",
	"tasks-server-directed-creation-no-hint":                   "failing_job",
	"sep-2663-legacy-task-param-ignored":                       "greet",
	"tasks-immediate-result-shortcut":                          "slow_compute",
	"tasks-result-type-complete-on-non-task-responses":         "greet",
	"sep-2663-durable-create-strong-consistency":               "slow_compute",
}

// conformance runs the suite's runs against the MCP endpoint url: every
// check of every applicable scenario passes, but for fixtureChecks.
func conformance(t *testing.T, url string) {
	n := node22(t)
	for _, run := range conformanceRuns {
		t.Run(run.name, func(t *testing.T) {
			out := t.TempDir()
			cmd := exec.Command(n, append([]string{"node_modules/@modelcontextprotocol/conformance/dist/index.js", "server", "--url", url, "-o", out}, run.args...)...)
			cmd.Dir = "testdata/node"
			log, _ := cmd.CombinedOutput() // it exits 1: the fixture scenarios fail
			for _, sc := range run.applicable {
				files, _ := filepath.Glob(filepath.Join(out, "server-"+sc+"-*", "checks.json"))
				if len(files) != 1 {
					t.Errorf("%s: no result\n%s", sc, log)
					continue
				}
				b, _ := os.ReadFile(files[0])
				var checks []struct {
					ID, Status, ErrorMessage string
				}
				if err := json.Unmarshal(b, &checks); err != nil {
					t.Errorf("%s: %v", sc, err)
					continue
				}
				passed := 0
				for _, c := range checks {
					switch {
					case c.Status == "SUCCESS":
						passed++
					case c.Status == "FAILURE" && fixtureChecks[c.ID] == "":
						t.Errorf("%s: %s failed: %s", sc, c.ID, c.ErrorMessage)
					}
				}
				if passed == 0 {
					t.Errorf("%s: no check passed", sc)
				}
			}
		})
	}
}

// TestConformance runs the official MCP conformance suite against the
// server over Streamable HTTP, for both revisions and the tasks
// extension: every applicable scenario passes.
func TestConformance(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	_, ts := serveHTTP(t, h, mcp.Options{})
	conformance(t, ts.URL+"/mcp")
}

// TestTypeScriptClient drives the server with the official TypeScript
// SDK client over Streamable HTTP and the Inspector CLI over stdio.
func TestTypeScriptClient(t *testing.T) {
	n := node(t)
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	_, ts := serveHTTP(t, h, mcp.Options{})
	cmd := exec.Command(n, "client.mjs", ts.URL+"/mcp")
	cmd.Dir = "testdata/node"
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, b)
	}
	var got struct {
		Tools     []string        `json:"tools"`
		Annotated json.RawMessage `json:"annotated"`
		Echo      json.RawMessage `json:"echo"`
		Failure   json.RawMessage `json:"failure"`
		Progress  int             `json:"progress"`
		Task      []struct {
			Type, Status, Error string
			Result              json.RawMessage
		} `json:"task"`
		Listed int `json:"listed"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	all := strings.Join(got.Tools, ",")
	if !strings.Contains(all, "core__echo") || !strings.Contains(all, "text__stats") {
		t.Errorf("tools %v", got.Tools)
	}
	if !strings.Contains(string(got.Annotated), `"readOnlyHint"`) || !strings.Contains(string(got.Annotated), `"agenthost/toolId":"text:stats"`) {
		t.Errorf("annotations and _meta: %s", got.Annotated)
	}
	if !strings.Contains(string(got.Echo), `"structuredContent":{"hello":"ts"}`) {
		t.Errorf("echo: %s", got.Echo)
	}
	if !strings.Contains(string(got.Failure), `"isError":true`) || !strings.Contains(string(got.Failure), "INVALID_ARGUMENTS") {
		t.Errorf("failure: %s", got.Failure)
	}
	// The task: created working, polled to completed, its result fetched.
	if n := len(got.Task); n < 3 || got.Task[0].Type != "taskCreated" || got.Task[n-2].Status != "completed" ||
		got.Task[n-1].Type != "result" || !strings.Contains(string(got.Task[n-1].Result), `"structuredContent":{"via":"task"}`) || got.Listed != 1 {
		t.Errorf("task: %+v, %d listed", got.Task, got.Listed)
	}
	// The Inspector CLI over the same endpoint, in both eras.
	for _, era := range []string{"legacy", "modern"} {
		out, err := inspectorCLI(t, "--server-url", ts.URL+"/mcp", "--transport", "http", "--protocol-era", era)
		if err != nil || !strings.Contains(out, `"via": "inspector"`) {
			t.Errorf("inspector (%s): %v\n%s", era, err, out)
		}
	}
}

// inspectorCLI runs the Inspector CLI's tools/call of core__echo with
// {"via":"inspector"} against the server args name, and returns its
// output.
func inspectorCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(node22(t), append(append([]string{"node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js", "--cli"}, args...),
		"--method", "tools/call", "--tool-name", "core__echo", "--tool-arg", "via=inspector")...)
	cmd.Dir = "testdata/node"
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// v2Result is what client2.mjs prints.
type v2Result struct {
	Version string          `json:"version"`
	Tools   []string        `json:"tools"`
	Echo    json.RawMessage `json:"echo"`
	Failure json.RawMessage `json:"failure"`
	Unknown struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"unknown"`
}

// clientV2 runs client2.mjs with the negotiation mode and transport
// args, and checks what it saw: the version it negotiated (legacy: the
// session revision; otherwise 2026-07-28), the catalogue, a call, a
// failed call and an unknown tool.
func clientV2(t *testing.T, mode string, args ...string) {
	t.Helper()
	cmd := exec.Command(node(t), append([]string{"client2.mjs", mode}, args...)...)
	cmd.Dir = "testdata/node"
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", mode, err, b)
	}
	var got v2Result
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v: %s", mode, err, b)
	}
	want := mcp.ProtocolModern
	if mode == "legacy" {
		want = "2025-11-25"
	}
	if got.Version != want {
		t.Errorf("%s: negotiated %q, want %q", mode, got.Version, want)
	}
	if !strings.Contains(strings.Join(got.Tools, ","), "core__echo") {
		t.Errorf("%s: tools %v", mode, got.Tools)
	}
	if !strings.Contains(string(got.Echo), `"structuredContent":{"hello":"v2"}`) ||
		(mode != "legacy") != strings.Contains(string(got.Echo), `"io.modelcontextprotocol/serverInfo"`) {
		t.Errorf("%s: echo %s", mode, got.Echo)
	}
	if !strings.Contains(string(got.Failure), `"isError":true`) || !strings.Contains(string(got.Failure), "INVALID_ARGUMENTS") {
		t.Errorf("%s: failure %s", mode, got.Failure)
	}
	if got.Unknown.Code != -32602 {
		t.Errorf("%s: unknown tool: %+v", mode, got.Unknown)
	}
}

// TestTypeScriptClientV2 drives the server over Streamable HTTP with the
// official TypeScript SDK v2 client in each of its negotiation modes:
// the session revision, server/discover first, and 2026-07-28 pinned.
func TestTypeScriptClientV2(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	_, ts := serveHTTP(t, h, mcp.Options{})
	for _, mode := range []string{"legacy", "auto", mcp.ProtocolModern} {
		t.Run(mode, func(t *testing.T) { clientV2(t, mode, "http", ts.URL+"/mcp") })
	}
}

// TestCLIClients runs the official clients against the built CLI:
// agenthost mcp over stdio (the TypeScript SDK v2 client in each mode,
// the Inspector CLI in both eras) and agenthost serve --no-auth (the
// conformance suite, which cannot send a token, and the v2 client).
func TestCLIClients(t *testing.T) {
	node22(t)
	bin := filepath.Join(t.TempDir(), "agenthost")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/agenthost").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	toolpacks := hosttest.Toolpacks(t)
	t.Run("mcp", func(t *testing.T) {
		for _, mode := range []string{"legacy", "auto", mcp.ProtocolModern} {
			t.Run(mode, func(t *testing.T) { clientV2(t, mode, "stdio", bin, "mcp", "--dir", toolpacks) })
		}
		for _, era := range []string{"legacy", "modern"} {
			out, err := inspectorCLI(t, "--protocol-era", era, bin, "mcp", "--dir", toolpacks)
			if err != nil || !strings.Contains(out, `"via": "inspector"`) {
				t.Errorf("inspector (%s): %v\n%s", era, err, out)
			}
		}
	})
	t.Run("serve", func(t *testing.T) {
		cmd := exec.Command(bin, "serve", "--no-auth", "--addr", "127.0.0.1:0", "--dir", toolpacks, "--data", t.TempDir())
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}()
		sc := bufio.NewScanner(stderr)
		base := ""
		for base == "" && sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), "serving on "); ok {
				base, _, _ = strings.Cut(rest, " ")
			}
		}
		if base == "" {
			t.Fatal("serve printed no address")
		}
		go func() { _, _ = io.Copy(io.Discard, stderr) }()
		conformance(t, base+"/mcp")
		for _, mode := range []string{"legacy", mcp.ProtocolModern} {
			t.Run(mode, func(t *testing.T) { clientV2(t, mode, "http", base+"/mcp") })
		}
	})
}
