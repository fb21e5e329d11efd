package mcp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/mcp"
)

// TestHostileInput sends what a broken or hostile client sends over
// Streamable HTTP: malformed JSON-RPC, an unknown method, arguments that
// are not an object, an oversized message, a flood of calls. Each gets a
// clear error and the server keeps serving.
func TestHostileInput(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	srv := mcp.New(h, mcp.Options{MaxMessageBytes: 1 << 20})
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	post := func(session, body string) (int, string, string) {
		req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header.Get("Mcp-Session-Id")
	}
	_, body, session := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if session == "" {
		t.Fatalf("no session: %s", body)
	}
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	tests := []struct {
		name, body string
		status     int
		want       string
	}{
		{"malformed", `{"jsonrpc":"2.0","id":2,"method":`, 400, ""},
		{"unknown method", `{"jsonrpc":"2.0","id":3,"method":"tools/explode"}`, 400, "unsupported"},
		{"arguments not an object", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"core__echo","arguments":[1,2]}}`, 200, `"isError":true`},
		{"unknown tool", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope__tool","arguments":{}}}`, 200, `nope__tool`},
		{"oversized", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"core__echo","arguments":{"x":"` + strings.Repeat("a", 2<<20) + `"}}}`, 413, ""},
	}
	for _, tc := range tests {
		status, body, _ := post(session, tc.body)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %.300s", tc.name, status, body)
		}
	}
	// A flood of concurrent calls from one client: every one answered.
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "flood", Version: "1"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Go(func() {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "core__echo", Arguments: map[string]any{"i": i}})
			if err == nil && res.IsError {
				err = io.ErrUnexpectedEOF
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("flood: %v", err)
	}
	// Still serving.
	if status, body, _ := post(session, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"core__echo","arguments":{"ok":true}}}`); status != 200 || !strings.Contains(body, `\"ok\":true`) {
		t.Fatalf("after all that: %d %s", status, body)
	}
}
