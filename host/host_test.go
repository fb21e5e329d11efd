package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/hashicorp/go-hclog"
)

func TestCall(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	ctx := context.Background()
	tests := []struct {
		name, tool, args string
		code             abi.Code // "" = success
		wantOut, wantMsg string
	}{
		{name: "echo", tool: "core:echo", args: `{"b":[1,2],"a":"x"}`, wantOut: `{"a":"x","b":[1,2]}`},
		{name: "echo empty args", tool: "core:echo", args: ``, wantOut: `{}`},
		{name: "echo null args", tool: "core:echo", args: `null`, wantOut: `{}`},
		{name: "unknown tool suggests", tool: "core:ecko", args: `{}`, code: abi.CodeUnknownTool, wantMsg: "core:echo"},
		{name: "bad JSON", tool: "core:echo", args: `{"a":`, code: abi.CodeInvalidArguments, wantMsg: "not valid JSON"},
		{name: "two JSON values", tool: "core:echo", args: `{} {}`, code: abi.CodeInvalidArguments, wantMsg: "more than one"},
		{name: "args not an object", tool: "core:echo", args: `[1]`, code: abi.CodeInvalidArguments},
		{name: "misspelt parameter", tool: "text:stats", args: `{"txt":"hello"}`, code: abi.CodeInvalidArguments, wantMsg: "text"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := h.Call(ctx, tc.tool, json.RawMessage(tc.args))
			if tc.code == "" {
				if env.Status != abi.StatusSuccess {
					t.Fatalf("status %s, error %v, logs %v", env.Status, env.Error, env.Logs)
				}
				if tc.wantOut != "" && string(env.Output) != tc.wantOut {
					t.Errorf("output %s, want %s", env.Output, tc.wantOut)
				}
				return
			}
			if env.Status != abi.StatusFailure || env.Error == nil || env.Error.Code != tc.code {
				t.Fatalf("got status %s error %v, want %s", env.Status, env.Error, tc.code)
			}
			if !strings.Contains(env.Error.Message, tc.wantMsg) {
				t.Errorf("message %q lacks %q", env.Error.Message, tc.wantMsg)
			}
		})
	}
}

func TestCall_policyDeniesTool(t *testing.T) {
	p := hosttest.Policy(t, `tools: {"core:echo": {deny: true}}`)
	h := hosttest.NewHost(t, p, hosttest.Toolpacks(t))
	env := h.Call(context.Background(), "core:echo", json.RawMessage(`{}`))
	if env.Error == nil || env.Error.Code != abi.CodePermissionDenied {
		t.Fatalf("got %+v, want PERMISSION_DENIED", env.Error)
	}
	if env := h.Call(context.Background(), "text:stats", json.RawMessage(`{"text":"a b"}`)); env.Status != abi.StatusSuccess {
		t.Fatalf("other tool failed: %+v", env.Error)
	}
}

func TestCall_concurrent(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args, _ := json.Marshal(map[string]int{"n": i})
			env := h.Call(context.Background(), "core:echo", args)
			if env.Status != abi.StatusSuccess || string(env.Output) != string(args) {
				errs <- string(env.Output)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("concurrent call returned %s", e)
	}
}

func TestCall_brokenManifestIsLoadError(t *testing.T) {
	dir := t.TempDir()
	manifest := `{"toolId":"bad:tool","displayName":"Bad","description":"broken module","version":"1.0.0",
	  "handler":{"type":"wasm","module":"bad.wasm","abi":"wasi-command"}}`
	if err := os.WriteFile(filepath.Join(dir, "bad.tool.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.wasm"), []byte("\x00asm\x01\x00\x00\x00garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := hosttest.NewHost(t, nil, dir, hosttest.Toolpacks(t))
	env := h.Call(context.Background(), "bad:tool", nil)
	if env.Error == nil || env.Error.Code != abi.CodeLoadError {
		t.Fatalf("got %+v, want LOAD_ERROR", env.Error)
	}
	// The host carries on.
	if env := h.Call(context.Background(), "core:echo", nil); env.Status != abi.StatusSuccess {
		t.Fatalf("next call failed: %+v", env.Error)
	}
}

func TestExec(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	ctx := context.Background()
	tests := []struct {
		name, output string
		status       abi.Status
		codes        []abi.Code // per result; "" = success
		observation  []string   // substrings, in order
	}{
		{name: "plain reply", output: "The answer is 42.", status: abi.StatusSuccess},
		{name: "two calls", output: "Let me see.\n<ACTION><core:echo><a>1</a></core:echo><text:stats><text>a b c</text></text:stats></ACTION>",
			status: abi.StatusSuccess, codes: []abi.Code{"", ""},
			observation: []string{`Observation: Tool core:echo executed successfully. Result: {"a":"1"}`, "Observation: Tool text:stats executed successfully."}},
		{name: "skip after failure", output: "<ACTION><core:echo/><nope:tool/><core:echo/></ACTION>",
			status: abi.StatusPartial, codes: []abi.Code{"", abi.CodeUnknownTool, abi.CodeSkipped},
			observation: []string{"Unknown tool 'nope:tool'", "Skipped - Tool core:echo"}},
		{name: "malformed", output: "<ACTION><core:echo><code>List<String></code></core:echo></ACTION>",
			status: abi.StatusFailure, observation: []string{"Observation: Error - Malformed ACTION block"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			turn := h.Exec(ctx, tc.output)
			if turn.Status != tc.status {
				t.Fatalf("status %s, want %s (error %v, results %+v)", turn.Status, tc.status, turn.Error, turn.Results)
			}
			if len(turn.Results) != len(tc.codes) {
				t.Fatalf("%d results, want %d", len(turn.Results), len(tc.codes))
			}
			for i, code := range tc.codes {
				got := abi.Code("")
				if turn.Results[i].Error != nil {
					got = turn.Results[i].Error.Code
				}
				if got != code {
					t.Errorf("result %d: code %q, want %q (%v)", i, got, code, turn.Results[i].Error)
				}
			}
			rest := turn.Observation
			for _, want := range tc.observation {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("observation lacks %q (in order):\n%s", want, turn.Observation)
				}
				rest = rest[i+len(want):]
			}
		})
	}
}

// TestExec_selfCorrection feeds the host what a model writes, then what it
// writes after reading the observation: the observation must name the fix.
func TestExec_selfCorrection(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	ctx := context.Background()
	tests := []struct {
		name, wrong, fixHint, right string
	}{
		{"misspelt parameter",
			"<ACTION><text:stats><txt>one two</txt></text:stats></ACTION>", "did you mean 'text'",
			"<ACTION><text:stats><text>one two</text></text:stats></ACTION>"},
		{"unknown tool",
			"<ACTION><text:stat><text>one two</text></text:stat></ACTION>", "text:stats",
			"<ACTION><text:stats><text>one two</text></text:stats></ACTION>"},
		{"malformed XML",
			"<ACTION><text:stats><text>if a<b && List<String> x</text></text:stats></ACTION>", "CDATA",
			"<ACTION><text:stats><text><![CDATA[if a<b && List<String> x]]></text></text:stats></ACTION>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			turn := h.Exec(ctx, tc.wrong)
			if turn.Status == abi.StatusSuccess {
				t.Fatalf("wrong output succeeded: %s", turn.Observation)
			}
			if !strings.Contains(turn.Observation, tc.fixHint) {
				t.Fatalf("observation does not name the fix %q:\n%s", tc.fixHint, turn.Observation)
			}
			turn = h.Exec(ctx, tc.right)
			if turn.Status != abi.StatusSuccess {
				t.Fatalf("corrected output failed: %s", turn.Observation)
			}
		})
	}
}

// TestCall_cancelledFirstCallIsNotRemembered: a caller that gives up while
// the tool is being prepared must not leave the tool broken for the next.
func TestCall_cancelledFirstCallIsNotRemembered(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = h.Call(ctx, "text:stats", json.RawMessage(`{"text":"a b"}`)) // may fail: the caller is gone
	env := h.Call(context.Background(), "text:stats", json.RawMessage(`{"text":"a b"}`))
	if env.Status != abi.StatusSuccess {
		t.Fatalf("call after a cancelled first call: %+v", env.Error)
	}
}

// TestCacheSizeCap checks that a host trims the cache to CacheMaxBytes,
// least recently used first (the cache grew without bound); the trim runs
// in the background and Close waits for it.
func TestCacheSizeCap(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "wazero", "old.bin")
	recent := filepath.Join(dir, "wazero", "recent.bin")
	for i, p := range []string{old, recent} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, 1000), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(time.Duration(i-2) * time.Hour)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	h, err := host.New(context.Background(), host.Options{CacheDir: dir, CacheMaxBytes: 1500})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(context.Background()); err != nil { // waits for the trim
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the least recently used entry survived: %v", err)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("the recent entry was evicted: %v", err)
	}
}

// TestCallLogLine pins the one info line per call: a call ID, the tool, the
// status, the code and the duration, each key once (tool= appeared twice).
func TestCallLogLine(t *testing.T) {
	var buf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: &buf, JSONFormat: true})
	h, err := host.New(context.Background(), host.Options{Dirs: []string{hosttest.Toolpacks(t)}, Logger: log, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	h.Call(context.Background(), "fs:read", json.RawMessage(`{"path":"/etc/passwd"}`))
	var calls int
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if strings.Count(line, `"tool":`) > 1 {
			t.Errorf("a key repeats: %s", line)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if m["@message"] != "call" {
			continue
		}
		calls++
		for _, k := range []string{"call_id", "tool", "status", "code", "duration_ms"} {
			if _, ok := m[k]; !ok {
				t.Errorf("the call line lacks %q: %s", k, line)
			}
		}
		if m["tool"] != "fs:read" || m["code"] != "PERMISSION_DENIED" {
			t.Errorf("call line = %s", line)
		}
	}
	if calls != 1 {
		t.Fatalf("%d call lines, want 1:\n%s", calls, buf.String())
	}
}

// TestToolsOnlyCallable pins what a model is shown: Tools (and so the
// prompt) leaves out policy-denied tools and network tools whose grant has
// no host; Filter still lists them (list marks them).
func TestToolsOnlyCallable(t *testing.T) {
	tests := []struct {
		name, policy string
		absent       []string
		present      []string
	}{
		{"default policy: no network", ``, []string{"web:fetch", "web:extract-links"}, []string{"core:echo", "fs:read"}},
		{"denied tool", `tools: {"core:echo": {deny: true}}`, []string{"core:echo"}, []string{"text:stats"}},
		{"network granted", `networkAccess: {allowHosts: ["example.com"]}`, nil, []string{"web:fetch", "core:echo"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := hosttest.NewHost(t, hosttest.Policy(t, tc.policy), hosttest.Toolpacks(t))
			shown := map[string]bool{}
			for _, tl := range h.Tools(host.Query{}) {
				shown[tl.ToolID] = true
			}
			for _, id := range tc.absent {
				if shown[id] {
					t.Errorf("%s is shown to the model", id)
				}
			}
			for _, id := range tc.present {
				if !shown[id] {
					t.Errorf("%s is missing", id)
				}
			}
			listed := h.Tools(host.Query{Uncallable: true})
			if len(listed) < len(h.Tools(host.Query{}))+len(tc.absent) {
				t.Errorf("the uncallable were lost: %d listed, %d shown", len(listed), len(h.Tools(host.Query{})))
			}
		})
	}
}

// TestSecretsRedacted pins that a granted host variable's value never
// comes back: a tool that echoes it gets [REDACTED] in its output.
func TestSecretsRedacted(t *testing.T) {
	t.Setenv("AGENTHOST_TEST_TOKEN", "s3cr3t-token-value")
	dir := t.TempDir()
	script := "import json, os, sys\njson.load(sys.stdin)\nv = os.environ['AGENTHOST_TEST_TOKEN']\nsys.stderr.write('token ' + v + '\\n')\nprint(json.dumps({'token': v}))\n"
	if err := os.WriteFile(filepath.Join(dir, "leak.py"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	m := `{"toolId":"t:leak","displayName":"Leak","description":"Prints a secret.","version":"1.0.0",
	"handler":{"type":"external-script","scriptPath":"leak.py","language":"python"},
	"securityContext":{"env":["AGENTHOST_TEST_TOKEN"]}}`
	if err := os.WriteFile(filepath.Join(dir, "leak.tool.json"), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	h := hosttest.NewHost(t, hosttest.Policy(t, "env: [AGENTHOST_TEST_TOKEN]"), dir)
	env := h.Call(context.Background(), "t:leak", nil)
	b, _ := json.Marshal(env)
	if env.Status != abi.StatusSuccess || strings.Contains(string(b), "s3cr3t") || !strings.Contains(string(b), "[REDACTED]") {
		t.Fatalf("envelope %s", b)
	}
}
