package mcp_test

import (
	"context"
	"io"
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
	_, ts := serveHTTP(t, h, mcp.Options{MaxMessageBytes: 1 << 20})
	c := newRawHTTP(t, ts.URL)
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
		status, body := c.post(t, tc.body, false)
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
	if _, body := c.post(t, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"core__echo","arguments":{"ok":true}}}`, true); !strings.Contains(body, `\"ok\":true`) {
		t.Fatalf("after all that: %s", body)
	}
}
