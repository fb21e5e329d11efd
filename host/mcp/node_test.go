package mcp_test

import (
	"encoding/json"
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

// applicable are the conformance scenarios that apply to a tools-only
// server whose tools are its catalogue. The others call fixture tools of
// the reference server by fixed names (test_simple_text,
// test_error_handling, …: our wire names are namespace__name), or test
// resources, prompts, completion and sampling, which this server does not
// offer; docs/MCP.md lists them.
var applicable = []string{"server-initialize", "logging-set-level", "ping", "tools-list", "server-sse-multiple-streams", "resources-list", "prompts-list"}

// TestConformance runs the official MCP conformance suite against the
// server over Streamable HTTP: every applicable scenario passes.
func TestConformance(t *testing.T) {
	n := node(t)
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	_, ts := serveHTTP(t, h, mcp.Options{})
	out := t.TempDir()
	cmd := exec.Command(n, "node_modules/@modelcontextprotocol/conformance/dist/index.js", "server", "--url", ts.URL+"/mcp", "-o", out)
	cmd.Dir = "testdata/node"
	log, _ := cmd.CombinedOutput() // it exits 1: the fixture scenarios fail
	for _, sc := range applicable {
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
			switch c.Status {
			case "SUCCESS":
				passed++
			case "FAILURE":
				t.Errorf("%s: %s failed: %s", sc, c.ID, c.ErrorMessage)
			}
		}
		if passed == 0 {
			t.Errorf("%s: no check passed", sc)
		}
	}
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
	// The Inspector CLI over stdio against the built CLI.
	bin := filepath.Join(t.TempDir(), "agenthost")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/agenthost").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	inspector, _ := filepath.Abs("testdata/node/node_modules/.bin/mcp-inspector")
	insp := exec.Command(inspector, "--cli", bin, "mcp", "--dir", hosttest.Toolpacks(t), "--method", "tools/call", "--tool-name", "core__echo", "--tool-arg", "via=inspector")
	insp.Dir = "testdata/node"
	insp.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	out, err := insp.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `inspector`) {
		t.Fatalf("inspector: %v\n%s", err, out)
	}
}
