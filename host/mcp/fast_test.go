package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/mcp"
)

// TestFastPath pins which requests the Streamable HTTP handler answers
// itself (as one JSON object) and which it leaves to the SDK (an event
// stream, or the SDK's refusal), and that both give the same result.
func TestFastPath(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	srv, ts := serveHTTP(t, h, mcp.Options{})
	c := newRawHTTP(t, ts.URL)
	const plain = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"core__echo","arguments":{"a":1}}}`
	send := func(body string, edit func(*http.Request)) (int, string, string) {
		req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if edit != nil {
			edit(req)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	header := func(k, v string) func(*http.Request) { return func(r *http.Request) { r.Header.Set(k, v) } }
	tests := []struct {
		name   string
		body   string
		edit   func(*http.Request)
		fast   bool
		status int
	}{
		{"plain", plain, nil, true, 200},
		{"string id", `{"jsonrpc":"2.0","id":"x-1","method":"tools/call","params":{"name":"core__echo","arguments":{}}}`, nil, true, 200},
		{"no arguments", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"core__echo"}}`, nil, true, 200},
		{"arguments not an object", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"core__echo","arguments":[1]}}`, nil, true, 200},
		{"progress token", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"_meta":{"progressToken":1},"name":"core__echo","arguments":{}}}`, nil, false, 200},
		{"task", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"core__echo","arguments":{},"task":{}}}`, nil, false, 200},
		{"unknown tool", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"nope__tool","arguments":{}}}`, nil, false, 200},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"core__echo","arguments":{}}}`, nil, false, 0},
		{"another member", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"core__echo","arguments":{}},"x":1}`, nil, false, 0},
		{"another member of params", `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"core__echo","arguments":{},"x":1}}`, nil, false, 0},
		{"a name in another case", `{"jsonrpc":"2.0","id":15,"Method":"tools/call","params":{"name":"core__echo","arguments":{}}}`, nil, false, 0},
		{"a duplicate name", `{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"nope__tool","name":"core__echo","arguments":{}}}`, nil, false, 0},
		{"trailing data", `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"core__echo","arguments":{}}} {}`, nil, false, 0},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":18,\"method\":\"tools/call\",\"params\":{\"name\":\"core__echo\",\"arguments\":{\"a\":\"\xff\"}}}", nil, false, 0},
		{"origin", plain, header("Origin", "https://evil.example"), false, 0},
		{"other protocol version", plain, header("Mcp-Protocol-Version", "2025-03-26"), false, 0},
		{"no protocol version", plain, func(r *http.Request) { r.Header.Del("Mcp-Protocol-Version") }, false, 0},
		{"foreign host", plain, func(r *http.Request) { r.Host = "evil.example" }, false, 403},
		{"accept json only", plain, header("Accept", "application/json"), false, 400},
		{"unknown session", plain, header("Mcp-Session-Id", "nope"), false, 404},
	}
	for _, tc := range tests {
		before := mcp.FastCalls(srv)
		status, ctype, body := send(tc.body, tc.edit)
		fast := mcp.FastCalls(srv) > before
		if fast != tc.fast || (tc.status != 0 && status != tc.status) {
			t.Errorf("%s: fast %v, %d %s %.200s", tc.name, fast, status, ctype, body)
		}
		if fast && (ctype != "application/json" || !strings.Contains(body, `"result"`)) {
			t.Errorf("%s: %s %.200s", tc.name, ctype, body)
		}
	}

	// The same calls through the SDK give the same results.
	sdkSrv, sdkTS := serveHTTP(t, h, mcp.Options{NoFastPath: true})
	viaSDK := newRawHTTP(t, sdkTS.URL)
	for _, body := range []string{
		plain,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"text__stats","arguments":{"txt":"misspelt"}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"core__echo","arguments":"no"}}`,
	} {
		_, fastBody := c.post(t, body, false)
		_, sdkBody := viaSDK.post(t, body, false)
		if f, s := decode(t, fastBody), decode(t, sdkBody); !sameJSON(f.Result, s.Result) {
			t.Errorf("fast %s\nsdk  %s", f.Result, s.Result)
		}
	}
	if mcp.FastCalls(sdkSrv) != 0 {
		t.Error("NoFastPath answered on the fast path")
	}

	// A session the client ended is not served on the fast path: the
	// SDK answers that it is gone.
	del, _ := http.NewRequest("DELETE", ts.URL, nil)
	del.Header.Set("Mcp-Session-Id", c.session)
	if resp, err := http.DefaultClient.Do(del); err == nil {
		resp.Body.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		before := mcp.FastCalls(srv)
		status, _, body := send(plain, nil)
		if status == 404 && mcp.FastCalls(srv) == before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after DELETE: %d %.200s", status, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// TestFastPathCancel: a call on the fast path whose guest spins is
// stopped by the client's notifications/cancelled, and by its
// disconnect.
func TestFastPathCancel(t *testing.T) {
	h := hosttest.NewHost(t, nil, loopPack(t))
	srv, ts := serveHTTP(t, h, mcp.Options{})
	c := newRawHTTP(t, ts.URL)
	done := make(chan string, 1)
	go func() {
		_, body := c.post(t, `{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"test__loop","arguments":{}}}`, false)
		done <- body
	}()
	deadline := time.After(30 * time.Second)
	for {
		c.post(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":21}}`, false)
		select {
		case body := <-done:
			if !strings.Contains(body, "CANCELLED") || mcp.FastCalls(srv) != 1 {
				t.Fatalf("%d fast calls: %.300s", mcp.FastCalls(srv), body)
			}
			goto disconnect
		case <-deadline:
			t.Fatal("notifications/cancelled did not stop the call")
		case <-time.After(20 * time.Millisecond):
		}
	}
disconnect:
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"test__loop","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	for !failedCancelled(h, 2) {
		select {
		case <-deadline:
			t.Fatal("the disconnect did not stop the call")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// failedCancelled reports whether test:loop failed n times, the last
// one CANCELLED, and runs no call now.
func failedCancelled(h *host.Host, n int64) bool {
	for _, th := range h.Health() {
		if th.ID == "test:loop" {
			return th.Failures == n && th.InFlight == 0 && th.LastFailure != nil && th.LastFailure.Code == "CANCELLED"
		}
	}
	return false
}

// TestFastPathUnencodable: a result that cannot be encoded (a tool's
// error details holding NaN) is answered once, as an internal error, and
// the call is not run a second time by the SDK.
func TestFastPathUnencodable(t *testing.T) {
	h := hosttest.NewHost(t, nil)
	type none struct{}
	bad := host.Func(host.FuncSpec{ID: "app:bad", Description: "Fails with details JSON cannot hold."}, func(context.Context, none) (none, error) {
		return none{}, abi.Errorf(abi.CodeToolError, "no").WithDetails(map[string]any{"x": math.NaN()})
	})
	if err := h.Register(bad); err != nil {
		t.Fatal(err)
	}
	srv, ts := serveHTTP(t, h, mcp.Options{})
	c := newRawHTTP(t, ts.URL)
	_, body := c.post(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"app__bad","arguments":{}}}`, false)
	if r := decode(t, body); r.Error == nil || r.Error.Code != -32603 || mcp.FastCalls(srv) != 1 {
		t.Fatalf("%d fast calls: %.300s", mcp.FastCalls(srv), body)
	}
	for _, th := range h.Health() {
		if th.ID == "app:bad" && th.Calls != 1 {
			t.Fatalf("run %d times", th.Calls)
		}
	}
}

// TestFastPathStdio pins which lines RunIO answers itself and which it
// leaves to the SDK, that both give the same result, that nothing is
// answered on the fast path before initialize has been, and that a
// client's notifications/cancelled and the end of its stream stop a
// call on the fast path.
func TestFastPathStdio(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t), loopPack(t))
	srv := mcp.New(h, mcp.Options{})
	t.Cleanup(func() { srv.Close() })
	const plain = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"core__echo","arguments":{"a":1}}}`

	// Before initialize is answered, every line goes to the SDK (which
	// refuses the call).
	early := newRawStdioNoInit(t, srv)
	if _, err := io.WriteString(early.w, plain+"\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if mcp.FastCalls(srv) != 0 {
		t.Fatal("a call before initialize was answered on the fast path")
	}

	c := newRawStdio(t, srv)
	for _, tc := range []struct {
		name, line string
		fast       bool
	}{
		{"plain", plain, true},
		{"string id", `{"jsonrpc":"2.0","id":"x-1","method":"tools/call","params":{"name":"core__echo","arguments":{}}}`, true},
		{"arguments not an object", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"core__echo","arguments":[1]}}`, true},
		{"arguments naming other methods", `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"core__echo","arguments":{"m":"initialize","n":"notifications/cancelled"}}}`, true},
		{"progress token", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"_meta":{"progressToken":1},"name":"core__echo","arguments":{}}}`, false},
		{"task", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"core__echo","arguments":{},"task":{}}}`, false},
		{"unknown tool", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"nope__tool","arguments":{}}}`, false},
		{"another member", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"core__echo","arguments":{}},"x":1}`, false},
	} {
		before := mcp.FastCalls(srv)
		line := c.roundTrip(t, tc.line, false)
		if fast := mcp.FastCalls(srv) > before; fast != tc.fast {
			t.Errorf("%s: fast %v: %.200s", tc.name, fast, line)
		}
	}

	// The same calls through the SDK give the same results.
	viaSDK := newRawStdio(t, mcp.New(h, mcp.Options{NoFastPath: true}))
	for _, line := range []string{
		plain,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"text__stats","arguments":{"txt":"misspelt"}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"core__echo","arguments":"no"}}`,
	} {
		f, s := decode(t, c.roundTrip(t, line, false)), decode(t, viaSDK.roundTrip(t, line, false))
		if !sameJSON(f.Result, s.Result) {
			t.Errorf("fast %s\nsdk  %s", f.Result, s.Result)
		}
	}

	// Many calls in flight at once, with requests for the SDK between
	// them: every answer arrives whole, once.
	const flight = 40
	for i := range flight {
		line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"core__echo","arguments":{"i":%d}}}`, 100+i, i)
		if i%10 == 0 {
			line += "\n" + fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, 200+i)
		}
		if _, err := io.WriteString(c.w, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[int]bool{}
	for len(seen) < flight+flight/10 {
		line, err := c.r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(line), &r) != nil || r.Result == nil || seen[r.ID] {
			t.Fatalf("answer %d: %.200s", len(seen), line)
		}
		if r.ID < 200 && !strings.Contains(line, fmt.Sprintf(`"structuredContent":{"i":%d}`, r.ID-100)) {
			t.Fatalf("answer to %d: %.200s", r.ID, line)
		}
		seen[r.ID] = true
	}

	// notifications/cancelled stops a call on the fast path.
	before := mcp.FastCalls(srv)
	if _, err := io.WriteString(c.w, `{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"test__loop","arguments":{}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	answer := c.roundTrip(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":21}}`, false)
	if !strings.Contains(answer, `"id":21`) || !strings.Contains(answer, "CANCELLED") || mcp.FastCalls(srv) != before+1 {
		t.Fatalf("%d fast calls: %.300s", mcp.FastCalls(srv)-before, answer)
	}

	// The end of the stream stops one.
	if _, err := io.WriteString(c.w, `{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"test__loop","arguments":{}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	stopped := make(chan struct{})
	go func() { c.stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("the stream's end did not stop the call")
	}
	if !failedCancelled(h, 2) {
		t.Fatal("the call at the stream's end was not cancelled")
	}
}
