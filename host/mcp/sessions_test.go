package mcp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/mcp"
)

// TestSessionBounds pins the bounds of Streamable HTTP sessions (they
// used to live for ever and without a cap: 10,000 sessions kept 164 MiB):
// an initialize beyond MaxSessions is 503; a session idle past
// SessionIdle is closed and its ID then unknown (404), while one that
// keeps calling, on the fast path too, stays; closing one makes room.
func TestSessionBounds(t *testing.T) {
	type in struct {
		A int `json:"a"`
	}
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{CacheDir: hosttest.CacheDir(t), Tools: []host.Tool{
		host.Func(host.FuncSpec{ID: "app:echo", Description: "Echoes."}, func(_ context.Context, a in) (in, error) { return a, nil })}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	srv, ts := serveHTTP(t, h, mcp.Options{MaxSessions: 2, SessionIdle: time.Minute})
	busy, idle := newRawHTTP(t, ts.URL), newRawHTTP(t, ts.URL)
	third := &rawHTTP{url: ts.URL, c: busy.c}
	if status, body := third.post(t, initialize, false); status != 503 || !strings.Contains(body, "too many MCP sessions") {
		t.Fatalf("a third session: %d %s", status, body)
	}
	call := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"app__echo","arguments":{"a":1}}}`
	start := time.Now()
	// The first sweep meets the sessions (as if half a minute ago); the
	// next, past the idle time of the one that sent nothing since, closes
	// it, and not the one that called meanwhile.
	if n := mcp.SweepSessions(srv, start.Add(-30*time.Second)); n != 0 {
		t.Fatalf("the first sweep closed %d sessions", n)
	}
	before := mcp.FastCalls(srv)
	if status, body := busy.post(t, call, false); status != 200 || !strings.Contains(body, "isError\":false") && !strings.Contains(body, "structuredContent") {
		t.Fatalf("a call: %d %s", status, body)
	}
	if mcp.FastCalls(srv) == before {
		t.Fatal("the call did not take the fast path, which this test is about")
	}
	if n := mcp.SweepSessions(srv, start.Add(45*time.Second)); n != 1 {
		t.Fatalf("the sweep closed %d sessions; want the idle one", n)
	}
	if status, _ := idle.post(t, call, false); status != 404 {
		t.Errorf("the closed session: %d; want 404", status)
	}
	if status, body := busy.post(t, call, false); status != 200 || !strings.Contains(body, "structuredContent") {
		t.Errorf("the busy session: %d %s", status, body)
	}
	if status, body := third.post(t, initialize, false); status != 200 || third.session == "" {
		t.Errorf("a new session once one closed: %d %s", status, body)
	}
}
