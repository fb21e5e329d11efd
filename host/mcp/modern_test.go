package mcp_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/mcp"
)

// modernMeta is the per-request _meta of a 2026-07-28 client.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`

// modernHeaders are the headers a 2026-07-28 client sends with method
// (and name, for the methods that name something).
func modernHeaders(method, name string) map[string]string {
	h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

// postStateless posts one message with no session and the given headers
// and returns the status and the JSON-RPC message answered (an event
// stream's data line, or the JSON body).
func postStateless(tb testing.TB, url, body string, headers map[string]string) (int, map[string]json.RawMessage) {
	tb.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	msg := string(b)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(msg, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, `"id"`) {
				msg = d
			}
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(msg), &m); err != nil {
		tb.Fatalf("%d %q: %v", resp.StatusCode, b, err)
	}
	return resp.StatusCode, m
}

// errorCode is the code of a JSON-RPC error answer, 0 for a result.
func errorCode(m map[string]json.RawMessage) int {
	var e struct{ Code int }
	if m["error"] == nil || json.Unmarshal(m["error"], &e) != nil {
		return 0
	}
	return e.Code
}

// TestModernHTTP pins the 2026-07-28 revision on /mcp beside the session
// revision: server/discover, stateless calls and lists with resultType
// and serverInfo, the tasks extension advertised, and every malformed or
// foreign request refused with the revision's error and status.
func TestModernHTTP(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	srv, ts := serveHTTP(t, h, mcp.Options{})
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"core__echo","arguments":{"a":1},` + modernMeta + `}}`
	list := `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{` + modernMeta + `}}`
	with := func(meta string) string {
		return `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":` + meta + `}}`
	}
	for _, tc := range []struct {
		name    string
		body    string
		headers map[string]string
		status  int
		code    int
		want    []string // substrings of the result or error
		absent  []string
	}{
		{"discover", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`, modernHeaders("server/discover", ""), 200, 0,
			[]string{`"resultType":"complete"`, `"2026-07-28"`, `"2025-11-25"`, `"extensions":{"io.modelcontextprotocol/tasks":{}}`, `"io.modelcontextprotocol/serverInfo":{"name":"agenthost"`, `"cacheScope":"private"`},
			[]string{`"tasks":{"cancel"`}},
		{"call", call, modernHeaders("tools/call", "core__echo"), 200, 0,
			[]string{`"resultType":"complete"`, `"structuredContent":{"a":1}`, `"io.modelcontextprotocol/serverInfo"`}, nil},
		{"call named in base64", call, modernHeaders("tools/call", "=?base64?Y29yZV9fZWNobw==?="), 200, 0, []string{`"structuredContent":{"a":1}`}, nil},
		{"failed call", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"text__stats","arguments":{"txt":1},` + modernMeta + `}}`, modernHeaders("tools/call", "text__stats"), 200, 0,
			[]string{`"isError":true`, `"resultType":"complete"`, `"io.modelcontextprotocol/serverInfo"`, `"agenthost/error"`}, []string{`"structuredContent"`}},
		{"list", list, modernHeaders("tools/list", ""), 200, 0, []string{`"resultType":"complete"`, `"core__echo"`}, []string{`"taskSupport"`}},
		{"unknown tool", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope","arguments":{},` + modernMeta + `}}`, modernHeaders("tools/call", "nope"), 400, -32602, []string{"nope"}, nil},
		{"version we do not speak", strings.ReplaceAll(list, "2026-07-28", "2099-01-01"), map[string]string{"Mcp-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list"}, 400, -32022,
			[]string{`"supported":["2026-07-28","2025-11-25"`, `"requested":"2099-01-01"`}, nil},
		{"version we do not speak, header only", `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`, map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, 400, -32022, []string{`"requested":"1999-01-01"`}, nil},
		{"no _meta", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`, modernHeaders("tools/list", ""), 400, -32602, []string{"io.modelcontextprotocol/protocolVersion"}, nil},
		{"version not a string", with(`{"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}}`), modernHeaders("tools/list", ""), 400, -32602, []string{"must be a protocol version string"}, nil},
		{"no client capabilities", with(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`), modernHeaders("tools/list", ""), 400, -32602, []string{"clientCapabilities"}, nil},
		{"client capabilities not an object", with(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}`), modernHeaders("tools/list", ""), 400, -32602, []string{"must be an object"}, nil},
		{"no version header", list, map[string]string{"Mcp-Method": "tools/list"}, 400, -32020, []string{"MCP-Protocol-Version header is missing"}, nil},
		{"version header differs", list, map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/list"}, 400, -32020, []string{`\"2025-11-25\" differs`}, nil},
		{"no method header", list, map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, 400, -32020, []string{"Mcp-Method header is missing"}, nil},
		{"method header differs", call, modernHeaders("tools/list", "core__echo"), 400, -32020, []string{`\"tools/list\" differs from the body's method \"tools/call\"`}, nil},
		{"no name header", call, modernHeaders("tools/call", ""), 400, -32020, []string{"Mcp-Name header is missing"}, nil},
		{"name header differs", call, modernHeaders("tools/call", "text__stats"), 400, -32020, []string{`"text__stats\" differs`}, nil},
		{"name header bad base64", call, modernHeaders("tools/call", "=?base64?***?="), 400, -32020, []string{"not valid base64"}, nil},
		{"header and _meta differ, _meta's version unknown", strings.ReplaceAll(list, `"2026-07-28"`, `"v999"`), modernHeaders("tools/list", ""), 400, -32020, []string{`\"v999\"`}, nil},
		{"initialize in 2026-07-28", initialize, modernHeaders("initialize", ""), 404, -32601, []string{"not a method of 2026-07-28"}, nil},
		{"neither session nor _meta", `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{}}`, nil, 400, -32602, []string{"initialize first"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, m := postStateless(t, ts.URL, tc.body, tc.headers)
			all := string(m["result"]) + string(m["error"])
			if status != tc.status || errorCode(m) != tc.code {
				t.Fatalf("status %d code %d, want %d %d: %s", status, errorCode(m), tc.status, tc.code, all)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("no %s in %s", w, all)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(all, a) {
					t.Errorf("%s in %s", a, all)
				}
			}
		})
	}
	if mcp.FastCalls(srv) == 0 {
		t.Error("no stateless call took the fast path")
	}
	// The session revision is served on the same endpoint meanwhile.
	c := newRawHTTP(t, ts.URL)
	if _, b := c.post(t, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"core__echo","arguments":{"b":2}}}`, true); !strings.Contains(b, `"structuredContent":{"b":2}`) || strings.Contains(b, "resultType") {
		t.Errorf("session call: %s", b)
	}
}

// TestModernFastPathMatchesSDK pins that a stateless call answered on the
// fast path is the same JSON as the SDK's answer (NoFastPath), for a
// success and for a failure.
func TestModernFastPathMatchesSDK(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	fastSrv, fast := serveHTTP(t, h, mcp.Options{})
	_, slow := serveHTTP(t, h, mcp.Options{NoFastPath: true})
	for _, tc := range []struct{ name, args string }{
		{"core__echo", `{"x":[1,"<&>"]}`},
		{"core__echo", `{}`},
		{"text__stats", `{"txt":1}`},
	} {
		body := `{"jsonrpc":"2.0","id":"r1","method":"tools/call","params":{"name":"` + tc.name + `","arguments":` + tc.args + `,` + modernMeta + `}}`
		before := mcp.FastCalls(fastSrv)
		_, a := postStateless(t, fast.URL, body, modernHeaders("tools/call", tc.name))
		_, b := postStateless(t, slow.URL, body, modernHeaders("tools/call", tc.name))
		if mcp.FastCalls(fastSrv) != before+1 {
			t.Errorf("%s %s: not on the fast path", tc.name, tc.args)
		}
		var ra, rb any
		if json.Unmarshal(a["result"], &ra) != nil || json.Unmarshal(b["result"], &rb) != nil {
			t.Fatalf("results: %s / %s", a["result"], b["result"])
		}
		ja, _ := json.Marshal(ra)
		jb, _ := json.Marshal(rb)
		if string(ja) != string(jb) {
			t.Errorf("%s %s:\nfast %s\nSDK  %s", tc.name, tc.args, ja, jb)
		}
	}
}

// TestModernStdio pins the same revision on stdio: discover and calls
// with _meta on a stream that never sent initialize, the unsupported
// version error, malformed _meta, and a request with neither.
func TestModernStdio(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	srv := mcp.New(h, mcp.Options{})
	t.Cleanup(srv.Close)
	c := newRawStdioNoInit(t, srv)
	for _, tc := range []struct {
		name, line string
		code       int
		want       []string
		absent     []string
	}{
		{"discover", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`, 0,
			[]string{`"resultType":"complete"`, `"supportedVersions":["2026-07-28","2025-11-25"`, `"io.modelcontextprotocol/tasks":{}`}, []string{`"tasks":{"cancel"`}},
		{"call", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"core__echo","arguments":{"s":"io"},` + modernMeta + `}}`, 0,
			[]string{`"structuredContent":{"s":"io"}`, `"resultType":"complete"`}, nil},
		{"list", `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{` + modernMeta + `}}`, 0, []string{`"core__echo"`}, []string{`"taskSupport"`}},
		{"version we do not speak", `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, -32022,
			[]string{`"supported":["2026-07-28"`, `"requested":"1999-01-01"`}, nil},
		{"no client capabilities", `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, -32602, []string{"clientCapabilities"}, nil},
		{"version not a string", `{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":null}}}`, -32602, []string{"protocol version string"}, nil},
		{"neither initialize nor _meta", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`, -32602, []string{"initialize first"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := c.roundTrip(t, tc.line, false)
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%v: %s", err, line)
			}
			if errorCode(m) != tc.code {
				t.Fatalf("code %d, want %d: %s", errorCode(m), tc.code, line)
			}
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("no %s in %s", w, line)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(line, a) {
					t.Errorf("%s in %s", a, line)
				}
			}
		})
	}
	// After initialize (on a stream of its own: the SDK takes a stream's
	// first stateless request for its initialization), the session
	// revision's requests need no _meta.
	if line := newRawStdio(t, srv).roundTrip(t, `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{}}`, true); !strings.Contains(line, `"taskSupport"`) {
		t.Errorf("session list: %.300s", line)
	}
}

// slowPack is loopPack's guest as an async tool, test:slow: {"benign":
// true} is echoed, {} spins until stopped.
func slowPack(t *testing.T) string {
	t.Helper()
	dir := loopPack(t)
	man, err := os.ReadFile(filepath.Join(dir, "loop.tool.json"))
	if err != nil {
		t.Fatal(err)
	}
	man = []byte(strings.Replace(strings.Replace(string(man), `"test:loop"`, `"test:slow"`, 1), `"version"`, `"async": true, "version"`, 1))
	if err := os.WriteFile(filepath.Join(dir, "loop.tool.json"), man, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestModernTasks pins the tasks extension of 2026-07-28: a call of an
// async tool from a client declaring the extension becomes a task, polled
// to its result, cancelled; everything else is answered as before, and
// the task methods refuse clients without the extension and unknown
// tasks.
func TestModernTasks(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t), slowPack(t))
	srv, ts := serveHTTP(t, h, mcp.Options{})
	const withTasks = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	call := func(tool, args, meta string) map[string]json.RawMessage {
		_, m := postStateless(t, ts.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":`+args+`,`+meta+`}}`, modernHeaders("tools/call", tool))
		return m
	}
	taskReq := func(method, id, meta string) (int, map[string]json.RawMessage) {
		return postStateless(t, ts.URL, `{"jsonrpc":"2.0","id":2,"method":"`+method+`","params":{"taskId":"`+id+`",`+meta+`}}`, modernHeaders(method, id))
	}
	var created struct{ ResultType, TaskID, Status string }

	// Calls that are not tasks: a tool that is not async, or a client
	// without the extension.
	for _, m := range []map[string]json.RawMessage{call("core__echo", `{"e":1}`, withTasks), call("test__slow", `{"benign":true}`, modernMeta)} {
		if !strings.Contains(string(m["result"]), `"resultType":"complete"`) || !strings.Contains(string(m["result"]), `"structuredContent"`) {
			t.Fatalf("not a plain result: %s", m["result"])
		}
	}

	// A task, polled to its result.
	m := call("test__slow", `{"benign":true}`, withTasks)
	if err := json.Unmarshal(m["result"], &created); err != nil || created.ResultType != "task" || created.Status != "working" || created.TaskID == "" {
		t.Fatalf("created: %s %s", m["result"], m["error"])
	}
	<-srv.TaskDone(created.TaskID)
	if s, m := taskReq("tasks/get", created.TaskID, withTasks); s != 200 || !strings.Contains(string(m["result"]), `"status":"completed"`) ||
		!strings.Contains(string(m["result"]), `"structuredContent":{"benign":true}`) || !strings.Contains(string(m["result"]), `"resultType":"complete"`) {
		t.Fatalf("get: %d %s %s", s, m["result"], m["error"])
	}
	if s, m := taskReq("tasks/update", created.TaskID, withTasks); s != 200 || !strings.Contains(string(m["result"]), `"resultType":"complete"`) {
		t.Fatalf("update: %d %s %s", s, m["result"], m["error"])
	}

	// A task cancelled while it runs: the guest stops.
	m = call("test__slow", `{}`, withTasks)
	if err := json.Unmarshal(m["result"], &created); err != nil || created.ResultType != "task" {
		t.Fatalf("created: %s %s", m["result"], m["error"])
	}
	if s, m := taskReq("tasks/cancel", created.TaskID, withTasks); s != 200 || m["error"] != nil {
		t.Fatalf("cancel: %d %s", s, m["error"])
	}
	<-srv.TaskDone(created.TaskID)
	if _, m := taskReq("tasks/get", created.TaskID, withTasks); !strings.Contains(string(m["result"]), `"status":"cancelled"`) {
		t.Fatalf("after cancel: %s %s", m["result"], m["error"])
	}

	// Refusals.
	for _, tc := range []struct {
		name, method, id, meta string
		code                   int
		want                   string
	}{
		{"no extension", "tasks/get", created.TaskID, modernMeta, -32021, `"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}`},
		{"unknown task", "tasks/get", "nope", withTasks, -32602, `no task \"nope\"`},
		{"unknown task cancelled", "tasks/cancel", "nope", withTasks, -32602, `no task`},
		{"tasks/result removed", "tasks/result", created.TaskID, withTasks, -32601, `poll with tasks/get`},
		{"tasks/list removed", "tasks/list", created.TaskID, withTasks, -32601, `poll with tasks/get`},
	} {
		s, m := taskReq(tc.method, tc.id, tc.meta)
		if want := map[int]int{-32601: 404}[tc.code]; (want == 0 && s != 400) || (want != 0 && s != want) || errorCode(m) != tc.code || !strings.Contains(string(m["error"]), tc.want) {
			t.Errorf("%s: %d %s", tc.name, s, m["error"])
		}
	}
	if s, m := postStateless(t, ts.URL, `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"x",`+withTasks+`}}`, modernHeaders("tasks/get", "")); s != 400 || errorCode(m) != -32020 {
		t.Errorf("no Mcp-Name: %d %s", s, m["error"])
	}

	// Over stdio.
	c := newRawStdioNoInit(t, srv)
	line := c.roundTrip(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"test__slow","arguments":{"benign":true},`+withTasks+`}}`, false)
	var answer struct {
		Result struct{ ResultType, TaskID string }
	}
	if err := json.Unmarshal([]byte(line), &answer); err != nil || answer.Result.ResultType != "task" {
		t.Fatalf("stdio create: %s", line)
	}
	<-srv.TaskDone(answer.Result.TaskID)
	if line := c.roundTrip(t, `{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{"taskId":"`+answer.Result.TaskID+`",`+withTasks+`}}`, false); !strings.Contains(line, `"status":"completed"`) {
		t.Fatalf("stdio get: %s", line)
	}
}
