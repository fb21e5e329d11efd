package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/mcp"
)

// codeHost is a host over the code, fs and core toolpacks with a small
// workspace and tight limits for programs, every tool warmed.
func codeHost(t *testing.T) *host.Host {
	t.Helper()
	ws := t.TempDir()
	for name, text := range map[string]string{"a.txt": "alpha", "b.txt": "beta"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tp := hosttest.Toolpacks(t)
	p := hosttest.Policy(t, "workspace: "+ws+`
fileAccess: {allowRead: ["*.txt"]}
tools:
  "code:starlark":
    config: {maxSteps: "200000"}
  "code:js":
    limits: {max: {timeoutMs: 5000}}
`)
	h := hosttest.NewHost(t, p, filepath.Join(tp, "code"), filepath.Join(tp, "fs"), filepath.Join(tp, "core"))
	h.Warm(context.Background(), host.WarmOptions{})
	return h
}

// TestCodeModeOff: without Options.CodeMode the server lists neither
// run_code nor search_tools, and a call of one is an unknown tool.
func TestCodeModeOff(t *testing.T) {
	h := hosttest.NewHost(t, nil, filepath.Join(hosttest.Toolpacks(t), "core"))
	_, ts := serveHTTP(t, h, mcp.Options{})
	c := newRawHTTP(t, ts.URL+"/mcp")
	_, list := c.post(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, true)
	if strings.Contains(list, "run_code") || strings.Contains(list, "search_tools") {
		t.Fatalf("code mode's tools listed by default: %s", list)
	}
	if _, got := c.post(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_code","arguments":{"code":"return 1"}}}`, false); !strings.Contains(strings.ToLower(got), "unknown tool") {
		t.Fatalf("run_code answered: %s", got)
	}
}

// TestCodeModeTypeScriptClient drives run_code and search_tools with
// the official TypeScript SDK client: the typed API in the description,
// a search, programs in both languages with their inner calls as
// progress, and every way a program goes wrong with its own code.
func TestCodeModeTypeScriptClient(t *testing.T) {
	n := node(t)
	h := codeHost(t)
	_, ts := serveHTTP(t, h, mcp.Options{CodeMode: true})
	cmd := exec.Command(n, "code.mjs", ts.URL+"/mcp")
	cmd.Dir = "testdata/node"
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, b)
	}
	var got struct {
		Tools       []string        `json:"tools"`
		Description string          `json:"description"`
		Search      json.RawMessage `json:"search"`
		JS          json.RawMessage `json:"js"`
		Progress    int             `json:"progress"`
		Starlark    json.RawMessage `json:"starlark"`
		Bad         map[string]struct {
			IsError bool   `json:"isError"`
			Code    string `json:"code"`
			Text    string `json:"text"`
		} `json:"bad"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	all := "," + strings.Join(got.Tools, ",") + ","
	if !strings.Contains(all, ",run_code,") || !strings.Contains(all, ",search_tools,") || !strings.Contains(all, ",fs__read,") {
		t.Errorf("tools %v", got.Tools)
	}
	if !strings.Contains(got.Description, "tools.fs.read(args: {") || !strings.Contains(got.Description, "search_tools") || strings.Contains(got.Description, "tools.code.") {
		t.Errorf("run_code's description:\n%s", got.Description)
	}
	if s := string(got.Search); !strings.Contains(s, `"id":"fs:read"`) || !strings.Contains(s, "tools.fs.read(args:") {
		t.Errorf("search_tools: %s", s)
	}
	if s := string(got.JS); !strings.Contains(s, `"result":"alpha+beta"`) || strings.Contains(s, `"isError":true`) || got.Progress != 2 {
		t.Errorf("js program: %s, %d progress notifications", s, got.Progress)
	}
	if s := string(got.Starlark); !strings.Contains(s, `"result":[0,1,2]`) || !strings.Contains(s, `"calls":3`) {
		t.Errorf("starlark program: %s", s)
	}
	want := map[string]struct{ code, text string }{
		"syntax":       {"INVALID_ARGUMENTS", "line 2"},
		"throws":       {"TOOL_ERROR", "boom"},
		"loop":         {"TIMEOUT", "5000 ms"},
		"huge":         {"OUTPUT_LIMIT", ""},
		"nested":       {"PERMISSION_DENIED", "cannot call run_code"},
		"starlarkLoop": {"FUEL_EXHAUSTED", "endless loop"},
		"language":     {"INVALID_ARGUMENTS", "cobol"},
	}
	for name, w := range want {
		g := got.Bad[name]
		if !g.IsError || g.Code != w.code || !strings.Contains(g.Text, w.text) {
			t.Errorf("%s: %+v, want %s with %q", name, g, w.code, w.text)
		}
	}
	if !strings.Contains(got.Bad["syntax"].Text, "column") {
		t.Errorf("a syntax error without its column: %s", got.Bad["syntax"].Text)
	}
}

// TestSearchToolsArgs: search_tools answers matches with their
// declarations in either language and refuses bad arguments with
// INVALID_ARGUMENTS, never an unbounded answer.
func TestSearchToolsArgs(t *testing.T) {
	tp := hosttest.Toolpacks(t)
	h := hosttest.NewHost(t, nil, filepath.Join(tp, "code"), filepath.Join(tp, "fs"), filepath.Join(tp, "core"))
	_, ts := serveHTTP(t, h, mcp.Options{CodeMode: true})
	c := newRawHTTP(t, ts.URL+"/mcp")
	tests := []struct {
		args string
		want []string // in the answer
		not  []string
	}{
		{args: `{"query":"read a file"}`, want: []string{`\"id\":\"fs:read\"`, `tools.fs.read(args:`}, not: []string{`"isError":true`, "code:"}},
		{args: `{"query":"read","language":"starlark","limit":1}`, want: []string{`tools.fs.read(path: str`}, not: []string{`\"id\":\"fs:list\"`}},
		{args: `{}`, want: []string{`\"id\":\"core:echo\"`}, not: []string{`"isError":true`}},
		{args: `{"query":"read","limit":51}`, want: []string{`"isError":true`, "INVALID_ARGUMENTS", "limit 51"}},
		{args: `{"query":"read","limit":-1}`, want: []string{`"isError":true`, "INVALID_ARGUMENTS"}},
		{args: `{"query":"read","language":"cobol"}`, want: []string{`"isError":true`, "INVALID_ARGUMENTS", "cobol"}},
		{args: `{"query":"read","extra":1}`, want: []string{`"isError":true`, "INVALID_ARGUMENTS", "extra"}},
		{args: `{"query":7}`, want: []string{`"isError":true`, "INVALID_ARGUMENTS"}},
	}
	for i, tc := range tests {
		_, got := c.post(t, `{"jsonrpc":"2.0","id":`+strconv.Itoa(10+i)+`,"method":"tools/call","params":{"name":"search_tools","arguments":`+tc.args+`}}`, false)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: lacks %s: %s", tc.args, w, got)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: holds %s: %s", tc.args, n, got)
			}
		}
	}
}
