package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/mcp"
)

// connect serves h over an in-memory transport and connects a Go SDK
// client to it.
func connect(t *testing.T, h *host.Host, copts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	srv := mcp.New(h, mcp.Options{})
	t.Cleanup(srv.Close)
	st, ct := sdk.NewInMemoryTransports()
	go func() { _ = srv.Run(ctx, st) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, copts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	// The server's answer to the handshake keeps what the SDK puts in it
	// (the middleware edits it).
	if init := cs.InitializeResult(); init == nil || init.ServerInfo == nil || init.ServerInfo.Name != "agenthost" || init.Capabilities.Tools == nil {
		t.Fatalf("handshake: %+v", init)
	}
	return cs
}

// TestToolsList pins tools/list: wire names, titles, schemas, annotations
// from the effective grant (not the request), _meta, and no denied tool.
func TestToolsList(t *testing.T) {
	h := hosttest.NewHost(t, hosttest.Policy(t, `tools: {"text:diff": {deny: true}}`), hosttest.Toolpacks(t))
	cs := connect(t, h, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*sdk.Tool{}
	for _, tl := range res.Tools {
		byName[tl.Name] = tl
	}
	echo := byName["core__echo"]
	if echo == nil || echo.Title != "Echo" || echo.Meta[mcp.MetaToolID] != "core:echo" || !strings.HasPrefix(echo.Meta[mcp.MetaDigest].(string), "sha256:") {
		t.Fatalf("core__echo: %+v", echo)
	}
	if a := echo.Annotations; a == nil || !a.ReadOnlyHint || *a.DestructiveHint || *a.OpenWorldHint {
		t.Fatalf("echo annotations %+v", a)
	}
	// fs:write asks for out/** but the default policy grants only $TMP:
	// the annotations follow the grant.
	if w := byName["fs__write"]; w == nil || !w.Annotations.ReadOnlyHint || *w.Annotations.DestructiveHint {
		t.Fatalf("fs__write annotations follow the request, not the grant: %+v", w.Annotations)
	}
	for _, n := range []string{"text__diff", "web__fetch"} {
		if byName[n] != nil {
			t.Errorf("%s is listed though the policy denies it (or grants no host)", n)
		}
	}
}

// TestToolsCall pins tools/call: structured output and text on success;
// isError with the observation and the error under _meta on failure.
func TestToolsCall(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	cs := connect(t, h, nil)
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "core__echo", Arguments: map[string]any{"a": 1}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if res.IsError || string(b) != `{"a":1}` || res.Content[0].(*sdk.TextContent).Text != `{"a":1}` {
		t.Fatalf("success: %+v", res)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "text__stats", Arguments: map[string]any{"txt": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	if !res.IsError || !strings.Contains(text, "Invalid parameters for text__stats") || res.StructuredContent != nil || res.Meta[mcp.MetaError] == nil {
		t.Fatalf("failure: %+v %q", res, text)
	}
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "nope__tool"}); err == nil {
		t.Fatal("an unknown tool is a JSON-RPC error")
	}
}

// TestListChangedAndCancel pins notifications/tools/list_changed when the
// catalogue changes, and a client cancel stopping the call.
func TestListChangedAndCancel(t *testing.T) {
	h := hosttest.NewHost(t, nil)
	var changed atomic.Int32
	cs := connect(t, h, &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed.Add(1) }})
	started := make(chan struct{})
	type none struct{}
	slow := host.Func(host.FuncSpec{ID: "app:slow", Description: "Waits for its context."}, func(ctx context.Context, _ none) (none, error) {
		close(started)
		<-ctx.Done()
		return none{}, ctx.Err()
	})
	if err := h.Register(slow); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for changed.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if changed.Load() == 0 {
		t.Fatal("no list_changed after Register")
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "app__slow"}); err == nil {
		t.Fatal("a cancelled call returned no error")
	}
	// The server saw the cancel: the host records a CANCELLED call.
	deadline = time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, th := range h.Health() {
			if th.ID == "app:slow" && th.LastFailure != nil && th.LastFailure.Code == "CANCELLED" {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the server did not cancel the call")
}

// TestStreamableHTTP serves the handler on loopback and calls a tool
// through the SDK's Streamable HTTP client.
func TestStreamableHTTP(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	_, ts := serveHTTP(t, h, mcp.Options{})
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "text__stats", Arguments: map[string]any{"text": "one two"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	if !strings.Contains(res.Content[0].(*sdk.TextContent).Text, `"words":2`) {
		t.Fatalf("%+v", res.Content)
	}
}

// TestIdempotentHint pins idempotentHint from the manifest's idempotent.
func TestIdempotentHint(t *testing.T) {
	h := hosttest.NewHost(t, nil)
	type none struct{}
	if err := h.Register(host.Func(host.FuncSpec{ID: "app:same", Description: "Same.", Idempotent: true}, func(context.Context, none) (none, error) { return none{}, nil })); err != nil {
		t.Fatal(err)
	}
	res, err := connect(t, h, nil).ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) != 1 || !res.Tools[0].Annotations.IdempotentHint {
		t.Fatalf("%v %+v", err, res)
	}
}
