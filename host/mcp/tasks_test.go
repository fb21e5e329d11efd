package mcp_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/mcp"
)

// loopPack is a toolpack of one tool, test:loop, whose guest spins until
// it is stopped (its input {} selects the loop).
func loopPack(t *testing.T) string {
	t.Helper()
	wasm, err := os.ReadFile(filepath.Join(hosttest.Root(t), "testdata/guests/loop/loop.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sum := sha256.Sum256(wasm)
	man := fmt.Sprintf(`{"toolId": "test:loop", "displayName": "Loop", "version": "1.0.0", "description": "Spins until stopped.",
		"handler": {"type": "wasm", "module": "loop.wasm", "abi": "wasi-command", "sha256": %q},
		"securityContext": {"limits": {"timeoutMs": 60000}}}`, hex.EncodeToString(sum[:]))
	if err := os.WriteFile(filepath.Join(dir, "loop.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "loop.tool.json"), []byte(man), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// rpc is one JSON-RPC answer.
type rpc struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// taskOf is the task of a tasks/get or tasks/cancel result, or of a
// CreateTaskResult's "task".
type taskOf struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           int64  `json:"ttl"`
	PollInterval  int64  `json:"pollInterval"`
}

// session sends one request of a client and returns its answer.
type session func(t *testing.T, msg string) rpc

// decode reads an answer: a JSON-RPC message, or a stream of server-sent
// events whose last data line is one.
func decode(t *testing.T, body string) rpc {
	t.Helper()
	if i := strings.LastIndex(body, "data: "); i >= 0 {
		body = strings.TrimSpace(strings.SplitN(body[i+len("data: "):], "\n", 2)[0])
	}
	var r rpc
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("%v: %.300s", err, body)
	}
	return r
}

// TestTasks drives task-augmented calls over Streamable HTTP and stdio:
// the capability and taskSupport advertised, a call that succeeds, one
// that fails, one cancelled while its guest spins (the guest stopped),
// listing with pages, every protocol error, and one session's tasks
// hidden from another.
func TestTasks(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t), loopPack(t))
	srv, ts := serveHTTP(t, h, mcp.Options{})
	clients := map[string]func() session{
		"http": func() session {
			c := newRawHTTP(t, ts.URL)
			return func(t *testing.T, msg string) rpc { _, body := c.post(t, msg, false); return decode(t, body) }
		},
		"stdio": func() session {
			c := newRawStdio(t, srv)
			return func(t *testing.T, msg string) rpc { return decode(t, c.roundTrip(t, msg, false)) }
		},
	}
	for name, connect := range clients {
		t.Run(name, func(t *testing.T) {
			testTasks(t, connect(), connect())
		})
	}
}

func testTasks(t *testing.T, send, other session) {
	id := 100
	call := func(t *testing.T, method, params string) rpc {
		t.Helper()
		id++
		return send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	}
	ok := func(t *testing.T, r rpc, v any) {
		t.Helper()
		if r.Error != nil {
			t.Fatalf("error %d %s", r.Error.Code, r.Error.Message)
		}
		if err := json.Unmarshal(r.Result, v); err != nil {
			t.Fatalf("%v: %s", err, r.Result)
		}
	}
	start := func(t *testing.T, tool, args string) taskOf {
		t.Helper()
		var created struct{ Task taskOf }
		ok(t, call(t, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s,"task":{"ttl":60000}}`, tool, args)), &created)
		tk := created.Task
		if tk.TaskID == "" || tk.Status != "working" || tk.TTL != mcp.DefaultTaskTTL.Milliseconds() || tk.PollInterval <= 0 {
			t.Fatalf("created %+v", tk)
		}
		if _, err := time.Parse(time.RFC3339, tk.CreatedAt); err != nil {
			t.Fatalf("createdAt: %v", err)
		}
		return tk
	}
	type toolResult struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		Content           []struct{ Text string }
		Meta              map[string]struct {
			TaskID string `json:"taskId"`
		} `json:"_meta"`
	}
	result := func(t *testing.T, tk taskOf) toolResult {
		t.Helper()
		var res toolResult
		ok(t, call(t, "tasks/result", fmt.Sprintf(`{"taskId":%q}`, tk.TaskID)), &res)
		if res.Meta["io.modelcontextprotocol/related-task"].TaskID != tk.TaskID {
			t.Errorf("tasks/result _meta: %+v", res.Meta)
		}
		return res
	}
	get := func(t *testing.T, tk taskOf) taskOf {
		t.Helper()
		var got taskOf
		ok(t, call(t, "tasks/get", fmt.Sprintf(`{"taskId":%q}`, tk.TaskID)), &got)
		return got
	}
	wantCode := func(t *testing.T, r rpc, code int) {
		t.Helper()
		if r.Error == nil || r.Error.Code != code {
			t.Errorf("want error %d, got %+v %s", code, r.Error, r.Result)
		}
	}

	// Advertised: the tools/list of this session marks every tool.
	var list struct {
		Tools []struct {
			Name      string
			Execution struct{ TaskSupport string } `json:"execution"`
		}
	}
	ok(t, call(t, "tools/list", `{}`), &list)
	for _, tool := range list.Tools {
		if tool.Execution.TaskSupport != "optional" {
			t.Errorf("%s: taskSupport %q", tool.Name, tool.Execution.TaskSupport)
		}
	}

	echo := start(t, "core__echo", `{"a":1}`)
	if res := result(t, echo); res.IsError || string(res.StructuredContent) != `{"a":1}` {
		t.Errorf("echo result %+v", res)
	}
	if got := get(t, echo); got.Status != "completed" || got.TTL != mcp.DefaultTaskTTL.Milliseconds() {
		t.Errorf("echo task %+v", got)
	}

	bad := start(t, "text__stats", `{"txt":"misspelt"}`)
	if res := result(t, bad); !res.IsError || !strings.Contains(res.Content[0].Text, "Invalid parameters") {
		t.Errorf("failed call result %+v", res)
	}
	if got := get(t, bad); got.Status != "failed" || !strings.Contains(got.StatusMessage, "Invalid parameters") {
		t.Errorf("failed task %+v", got)
	}

	loop := start(t, "test__loop", `{}`)
	time.Sleep(50 * time.Millisecond)
	if got := get(t, loop); got.Status != "working" {
		t.Fatalf("spinning task %+v", got)
	}
	var cancelled taskOf
	ok(t, call(t, "tasks/cancel", fmt.Sprintf(`{"taskId":%q}`, loop.TaskID)), &cancelled)
	if cancelled.Status != "cancelled" {
		t.Errorf("cancel answered %+v", cancelled)
	}
	if res := result(t, loop); !res.IsError || !strings.Contains(res.Content[0].Text, "CANCELLED") {
		t.Errorf("cancelled call result %+v", res)
	}
	if got := get(t, loop); got.Status != "cancelled" {
		t.Errorf("after cancel %+v", got)
	}
	wantCode(t, call(t, "tasks/cancel", fmt.Sprintf(`{"taskId":%q}`, loop.TaskID)), -32602)
	wantCode(t, call(t, "tasks/cancel", fmt.Sprintf(`{"taskId":%q}`, echo.TaskID)), -32602)

	// A normal call is untouched.
	var plain toolResult
	ok(t, call(t, "tools/call", `{"name":"core__echo","arguments":{"task":"not a task"}}`), &plain)
	if string(plain.StructuredContent) != `{"task":"not a task"}` {
		t.Errorf("plain call %+v", plain)
	}

	// Pages: 3 tasks so far, then 100 more; every one listed once, in order.
	for range 100 {
		start(t, "core__echo", `{}`)
	}
	var all []taskOf
	cursor := ""
	for page := 0; ; page++ {
		var res struct {
			Tasks      []taskOf
			NextCursor string
		}
		params := `{}`
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		ok(t, call(t, "tasks/list", params), &res)
		all = append(all, res.Tasks...)
		if cursor = res.NextCursor; cursor == "" || page > 5 {
			break
		}
	}
	if len(all) != 103 || all[0].TaskID != echo.TaskID || all[2].TaskID != loop.TaskID {
		t.Errorf("listed %d tasks, first %+v", len(all), all[0])
	}

	// Protocol errors.
	wantCode(t, call(t, "tasks/get", `{"taskId":"nope"}`), -32602)
	wantCode(t, call(t, "tasks/result", `{"taskId":"nope"}`), -32602)
	wantCode(t, call(t, "tasks/list", `{"cursor":"nope"}`), -32602)
	id++
	if r := send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tasks/list"}`, id)); r.Error != nil || !strings.Contains(string(r.Result), echo.TaskID) {
		t.Errorf("tasks/list without params: %+v", r.Error)
	}
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		id++
		wantCode(t, send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q}`, id, m)), -32602)
	}
	wantCode(t, call(t, "tools/call", `{"task":{}}`), -32602)
	wantCode(t, call(t, "tools/call", `{"name":"nope__tool","arguments":{},"task":{}}`), -32602)

	// A flood: a session holds at most MaxSessionTasks; another session
	// is not held back by it.
	for range mcp.MaxSessionTasks - len(all) {
		start(t, "core__echo", `{}`)
	}
	wantCode(t, call(t, "tools/call", `{"name":"core__echo","arguments":{},"task":{}}`), -32603)

	// Another session sees none of these tasks.
	wantCode(t, other(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":%q}}`, echo.TaskID)), -32602)
	r := other(t, `{"jsonrpc":"2.0","id":8,"method":"tasks/list","params":{}}`)
	if r.Error != nil || string(r.Result) != `{"tasks":[]}` {
		t.Errorf("another session's list: %+v %s", r.Error, r.Result)
	}
	r = other(t, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"core__echo","arguments":{},"task":{}}}`)
	if r.Error != nil || !strings.Contains(string(r.Result), `"working"`) {
		t.Errorf("another session's task: %+v %s", r.Error, r.Result)
	}
}

// TestTasksInitialize checks the tasks capability in initialize's answer.
func TestTasksInitialize(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	_, ts := serveHTTP(t, h, mcp.Options{})
	c := &rawHTTP{url: ts.URL, c: ts.Client()}
	_, body := c.post(t, initialize, true)
	var res struct {
		Capabilities struct {
			Tasks struct {
				List, Cancel *struct{}
				Requests     struct{ Tools struct{ Call *struct{} } }
			}
		}
	}
	if err := json.Unmarshal(decode(t, body).Result, &res); err != nil {
		t.Fatal(err)
	}
	if tk := res.Capabilities.Tasks; tk.List == nil || tk.Cancel == nil || tk.Requests.Tools.Call == nil {
		t.Errorf("capabilities: %s", body)
	}
}

// TestTasksClose: the end of a task's session stops its spinning guest,
// and so does closing the server (which returns).
func TestTasksClose(t *testing.T) {
	h := hosttest.NewHost(t, nil, loopPack(t))
	srv := mcp.New(h, mcp.Options{})
	spin := func() *rawStdio {
		c := newRawStdio(t, srv)
		r := decode(t, c.roundTrip(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test__loop","arguments":{},"task":{}}}`, false))
		if r.Error != nil || !strings.Contains(string(r.Result), `"working"`) {
			t.Fatalf("%+v %s", r.Error, r.Result)
		}
		return c
	}
	spin().stop()
	deadline := time.Now().Add(30 * time.Second)
	for !cancelled(h) {
		if time.Now().After(deadline) {
			t.Fatal("the session ended and its task's guest still spins")
		}
		time.Sleep(10 * time.Millisecond)
	}
	spin()
	done := make(chan struct{})
	go func() { srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not stop the task's guest")
	}
}

// cancelled reports whether h's last failed call of test:loop was
// cancelled.
func cancelled(h *host.Host) bool {
	for _, th := range h.Health() {
		if th.ID == "test:loop" && th.LastFailure != nil && th.LastFailure.Code == "CANCELLED" {
			return true
		}
	}
	return false
}

// TestTasksDrain: a draining server refuses new tasks while the running
// one goes on, and Wait returns once it has ended.
func TestTasksDrain(t *testing.T) {
	h := hosttest.NewHost(t, nil)
	release := make(chan struct{})
	type none struct{}
	hold := host.Func(host.FuncSpec{ID: "app:hold", Description: "Waits to be released."}, func(ctx context.Context, _ none) (none, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return none{}, nil
	})
	if err := h.Register(hold); err != nil {
		t.Fatal(err)
	}
	srv := mcp.New(h, mcp.Options{})
	defer srv.Close()
	c := newRawStdio(t, srv)
	call := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"app__hold","arguments":{},"task":{}}}`
	if r := decode(t, c.roundTrip(t, fmt.Sprintf(call, 2), false)); r.Error != nil {
		t.Fatalf("%+v", r.Error)
	}
	srv.Drain()
	if r := decode(t, c.roundTrip(t, fmt.Sprintf(call, 3), false)); r.Error == nil || r.Error.Code != -32603 {
		t.Errorf("a task while draining: %+v %s", r.Error, r.Result)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := srv.Wait(ctx); err == nil {
		t.Fatal("Wait returned while the task ran")
	}
	close(release)
	if err := srv.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}
