package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
)

// firstParty returns the manifest of a first-party tool as a map, with
// its examples removed, and copies its module into dir.
func firstParty(t *testing.T, dir, pack, file string) map[string]any {
	t.Helper()
	root, _ := filepath.Abs("../..")
	raw, err := os.ReadFile(filepath.Join(root, "toolpacks", pack, file))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	module := m["handler"].(map[string]any)["module"].(string)
	code, err := os.ReadFile(filepath.Join(root, "toolpacks", pack, module))
	if err != nil {
		t.Fatalf("%v (run make toolpacks)", err)
	}
	writeText(t, filepath.Join(dir, module), string(code))
	delete(m, "examples")
	return m
}

// writeJSON writes v as JSON at path, making its folder.
func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	writeText(t, path, string(b))
}

func writeText(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return v
}

// TestExampleFixtures runs `agenthost test` over packs whose examples use
// fixtures: a workspace folder copied for the call, canned HTTP responses
// served on loopback to a tool whose allowlist is pointed at them, and
// the outcomes when a fixture is missing or wrong, or when the example
// needs what a test cannot have.
func TestExampleFixtures(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", filepath.Join(os.TempDir(), "agenthost-test-cache"))
	fetch := func(hosts []string, examples string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			m := firstParty(t, dir, "web", "web-fetch.tool.json")
			m["securityContext"].(map[string]any)["networkAccess"] = map[string]any{"allowHosts": hosts}
			m["examples"] = decode(t, examples)
			writeJSON(t, filepath.Join(dir, "fetch.tool.json"), m)
		}
	}
	status := `{"url":"https://api.example.com/v1/status?full=1","headers":{"Content-Type":"application/json"},"body":"{\"ok\":true}"}`
	statusOut := `{"url":"https://api.example.com/v1/status?full=1","status":200,"headers":{"content-length":"11","content-type":"application/json"},"text":"{\"ok\":true}","bytes":11,"truncated":false}`
	read := func(examples string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			m := firstParty(t, dir, "fs", "fs-read.tool.json")
			m["examples"] = decode(t, examples)
			writeJSON(t, filepath.Join(dir, "read.tool.json"), m)
			writeText(t, filepath.Join(dir, "testdata", "ws", "notes", "a.txt"), "fixture text\n")
		}
	}
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		path    []string // PATH for the run; nil keeps it
		outcome string   // the one example's (or load's) outcome
		reason  []string // in its reason
	}{
		{name: "canned response through a narrow allowlist, URL mapped back",
			setup: fetch([]string{"api.example.com"}, `[{"description":"d","input":{"url":"https://api.example.com/v1/status?full=1"},
				"expectedOutput":`+statusOut+`,"fixtures":{"http":[`+status+`]}}]`),
			outcome: outcomePass},
		{name: "a wrong expectation still fails",
			setup: fetch([]string{"*"}, `[{"description":"d","input":{"url":"https://api.example.com/v1/status?full=1"},
				"expectedOutput":{"url":"x","status":200,"headers":{},"text":"","bytes":0,"truncated":false},"fixtures":{"http":[`+status+`]}}]`),
			outcome: outcomeFail, reason: []string{`"url":"https://api.example.com/v1/status?full=1"`}},
		{name: "no fixture: the network is skipped",
			setup:   fetch([]string{"*"}, `[{"description":"d","input":{"url":"https://api.example.com/v1/status"}}]`),
			outcome: outcomeSkip, reason: []string{"needs the network (api.example.com)", "fixtures.http"}},
		{name: "a request without a canned response fails and is named",
			setup: fetch([]string{"*"}, `[{"description":"d","input":{"url":"https://api.example.com/v2/other"},
				"expectedOutput":`+statusOut+`,"fixtures":{"http":[`+status+`]}}]`),
			outcome: outcomeFail, reason: []string{"requests without a canned response (answered 404): GET https://api.example.com/v2/other"}},
		{name: "a host the example calls without a canned response fails",
			setup: fetch([]string{"*"}, `[{"description":"d","input":{"url":"https://elsewhere.example.org/"},
				"fixtures":{"http":[`+status+`]}}]`),
			outcome: outcomeFail, reason: []string{"called elsewhere.example.org, which has no canned response"}},
		{name: "a canned host the tool does not request fails",
			setup: fetch([]string{"api.example.com"}, `[{"description":"d","input":{"url":"https://api.example.com/v1/status?full=1"},
				"fixtures":{"http":[`+status+`,{"url":"https://evil.example.net/"}]}}]`),
			outcome: outcomeFail, reason: []string{"evil.example.net/, a host the tool's networkAccess.allowHosts does not request"}},
		{name: "workspace fixture",
			setup: read(`[{"description":"d","input":{"path":"notes/a.txt"},"fixtures":{"workspace":"testdata/ws"},
				"expectedOutput":{"path":"/workspace/notes/a.txt","size":13,"offset":0,"bytesRead":13,"encoding":"utf-8","content":"fixture text\n","eof":true}}]`),
			outcome: outcomePass},
		{name: "workspace fixture missing",
			setup:   read(`[{"description":"d","input":{"path":"notes/a.txt"},"fixtures":{"workspace":"testdata/none"}}]`),
			outcome: outcomeFail, reason: []string{"fixtures: workspace testdata/none: does not exist"}},
		{name: "workspace fixture escaping through a symlink",
			setup: func(t *testing.T, dir string) {
				read(`[{"description":"d","input":{"path":"notes/a.txt"},"fixtures":{"workspace":"testdata/link"}}]`)(t, dir)
				if err := os.Symlink(t.TempDir(), filepath.Join(dir, "testdata", "link")); err != nil {
					t.Fatal(err)
				}
			},
			outcome: outcomeFail, reason: []string{"outside the manifest's folder"}},
		{name: "a script whose interpreter is missing is skipped",
			setup: func(t *testing.T, dir string) {
				writeText(t, filepath.Join(dir, "up.py"), "import json,sys\nprint(json.dumps({}))\n")
				writeText(t, filepath.Join(dir, "up.tool.json"), `{"toolId":"demo:up","displayName":"Up","description":"d","version":"1.0.0",
					"handler":{"type":"external-script","scriptPath":"up.py","language":"python"},
					"examples":[{"description":"d","input":{}}]}`)
			},
			path: []string{}, outcome: outcomeSkip, reason: []string{"a python script needs python3 on PATH"}},
		{name: "a tool needing credentials is skipped without an issuer",
			setup: func(t *testing.T, dir string) {
				writeText(t, filepath.Join(dir, "up.py"), "print('{}')\n")
				writeText(t, filepath.Join(dir, "up.tool.json"), `{"toolId":"demo:cred","displayName":"Cred","description":"d","version":"1.0.0",
					"handler":{"type":"external-script","scriptPath":"up.py","language":"python"},
					"securityContext":{"credentials":["crm"]},"examples":[{"description":"d","input":{}}]}`)
			},
			outcome: outcomeSkip, reason: []string{"demo:cred needs the credentials crm"}},
		{name: "a Go function of a host application is skipped",
			setup: func(t *testing.T, dir string) {
				writeText(t, filepath.Join(dir, "svc.tool.json"), `{"toolId":"app:lookup","displayName":"Lookup","description":"d","version":"1.0.0",
					"handler":{"type":"service-method","serviceName":"crm","methodName":"Lookup"}}`)
			},
			outcome: outcomeSkip, reason: []string{"app:lookup is a Go function (service crm, method Lookup)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "pack")
			tc.setup(t, dir)
			if tc.path != nil {
				t.Setenv("PATH", strings.Join(tc.path, string(os.PathListSeparator)))
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"test", "--json", dir}, strings.NewReader(""), &stdout, &stderr)
			var rep testReport
			if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
				t.Fatalf("exit %d, stdout %q, stderr %s", code, stdout.String(), stderr.String())
			}
			var got testFailure
			outcome := outcomePass
			switch {
			case rep.Failed+rep.Passed+rep.Skipped != 1:
				t.Fatalf("report %+v, want one outcome", rep)
			case rep.Failed == 1:
				outcome, got = outcomeFail, rep.Failures[0]
			case rep.Skipped == 1:
				outcome, got = outcomeSkip, rep.Skips[0]
			}
			if outcome != tc.outcome {
				t.Fatalf("outcome %s (%s), want %s; stderr %s", outcome, got.Reason, tc.outcome, stderr.String())
			}
			if want := map[bool]int{true: 1, false: 0}[outcome == outcomeFail]; code != want {
				t.Errorf("exit %d, want %d", code, want)
			}
			for _, w := range tc.reason {
				if !strings.Contains(got.Reason, w) {
					t.Errorf("reason %q does not contain %q", got.Reason, w)
				}
			}
		})
	}
}

// TestWorkspaceFixtureIsACopy checks that a tool writing into its
// workspace fixture writes into a throwaway copy, granted for the call,
// and leaves the toolpack's folder as it was.
func TestWorkspaceFixtureIsACopy(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", filepath.Join(os.TempDir(), "agenthost-test-cache"))
	dir := filepath.Join(t.TempDir(), "pack")
	writeText(t, filepath.Join(dir, "testdata", "ws", "out", "old.md"), "the fixture's own text\n")
	m := firstParty(t, dir, "fs", "fs-write.tool.json")
	m["examples"] = decode(t, `[{"description":"d","input":{"path":"out/new.md","content":"hi"},"fixtures":{"workspace":"testdata/ws"},
		"expectedOutput":{"path":"/workspace/out/new.md","bytesWritten":2,"size":2,"created":true}},
		{"description":"again: a fresh copy","input":{"path":"out/new.md","content":"hi"},"fixtures":{"workspace":"testdata/ws"},
		"expectedOutput":{"path":"/workspace/out/new.md","bytesWritten":2,"size":2,"created":true}},
		{"description":"overwrite a fixture file","input":{"path":"out/old.md","content":"replaced"},"fixtures":{"workspace":"testdata/ws"},
		"expectedOutput":{"path":"/workspace/out/old.md","bytesWritten":8,"size":8,"created":false}}]`)
	writeJSON(t, filepath.Join(dir, "write.tool.json"), m)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"test", dir}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "3 passed, 0 failed, 0 skipped") {
		t.Errorf("stdout %q", stdout.String())
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "testdata", "ws", "out")); len(entries) != 1 {
		t.Errorf("the fixture folder changed: %v", entries)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "testdata", "ws", "out", "old.md")); string(b) != "the fixture's own text\n" {
		t.Errorf("the fixture's file was rewritten: %q", b)
	}
}

// TestFixtureMapping checks the rewriting between an example's origins and
// its loopback servers, in both directions and through nested JSON, and
// how a network refusal is told from other failures.
func TestFixtureMapping(t *testing.T) {
	fx := &fixture{origins: map[string]string{"https://api.example.com": "http://127.0.0.1:5555"}}
	in, err := rewriteStrings(json.RawMessage(`{"url":"https://api.example.com/v1?q=1","list":["https://api.example.com",2],"https://api.example.com":true}`), fx.toLoopback)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"http://127.0.0.1:5555":true,"list":["http://127.0.0.1:5555",2],"url":"http://127.0.0.1:5555/v1?q=1"}`; string(in) != want {
		t.Errorf("to loopback: %s\nwant %s", in, want)
	}
	if got := fx.toOriginal("fetched http://127.0.0.1:5555/a from 127.0.0.1:5555"); got != "fetched https://api.example.com/a from api.example.com" {
		t.Errorf("to original: %q", got)
	}
	if _, err := rewriteStrings(json.RawMessage(`{"a":`), fx.toLoopback); err == nil {
		t.Error("broken JSON rewritten")
	}
	denied := func(details any, msg string) abi.Envelope {
		return abi.Envelope{Status: abi.StatusFailure, Error: &abi.Error{Code: abi.CodePermissionDenied, Message: msg, Details: details}}
	}
	tests := []struct {
		name string
		env  abi.Envelope
		host string
	}{
		{"details from the guard", denied(map[string]string{"host": "a.example"}, ""), "a.example"},
		{"details decoded from JSON", denied(map[string]any{"host": "b.example"}, ""), "b.example"},
		{"the message alone", denied(nil, "network access to c.example denied: not in the allowlist"), "c.example"},
		{"a short message", denied(nil, "network access to "), ""},
		{"a file refusal", denied(map[string]string{"path": "/etc"}, "read /etc denied"), ""},
		{"another code", abi.Envelope{Status: abi.StatusFailure, Error: &abi.Error{Code: abi.CodeTimeout, Details: map[string]string{"host": "x"}}}, ""},
		{"success", abi.Envelope{Status: abi.StatusSuccess}, ""},
	}
	for _, tc := range tests {
		host, ok := networkDenial(tc.env)
		if host != tc.host || ok != (tc.host != "") {
			t.Errorf("%s: networkDenial = %q %v, want %q", tc.name, host, ok, tc.host)
		}
	}
}

// TestIsolationMissingIsASkip checks that a script call refused because
// the machine lacks kernel isolation is told apart from other refusals.
func TestIsolationMissingIsASkip(t *testing.T) {
	tests := []struct {
		env  abi.Envelope
		skip bool
	}{
		{abi.Envelope{Status: abi.StatusFailure, Error: &abi.Error{Code: abi.CodePermissionDenied,
			Message: "kernel isolation unavailable (landlock: not supported) and the policy does not allow degraded isolation (isolation.allowDegraded)"}}, true},
		{abi.Envelope{Status: abi.StatusFailure, Error: &abi.Error{Code: abi.CodePermissionDenied, Message: "read /etc/passwd denied"}}, false},
		{abi.Envelope{Status: abi.StatusFailure, Error: &abi.Error{Code: abi.CodeToolError, Message: "kernel isolation unavailable"}}, false},
		{abi.Envelope{Status: abi.StatusSuccess}, false},
	}
	for i, tc := range tests {
		reason := isolationMissing(tc.env)
		if (reason != "") != tc.skip {
			t.Errorf("case %d: %q, want skip %v", i, reason, tc.skip)
		}
		if tc.skip && !strings.Contains(reason, "isolation.allowDegraded") {
			t.Errorf("case %d: the reason %q does not say what would let it run", i, reason)
		}
	}
}
