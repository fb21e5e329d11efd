package mcp_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host/approval"
	"github.com/agenthost/agenthost/host/mcp"
)

// TestApproveStdio asks for approvals over stdio (RunIO, as `agenthost
// mcp` serves) with the official Go SDK client in both revisions
// (2026-07-28: input_required, which its driver fulfils and retries;
// 2025-11-25: elicitation/create during the call), whose handler
// answers: allow once runs the call, decline refuses it; each decision is
// recorded as "mcp:" and the name the client gave.
func TestApproveStdio(t *testing.T) {
	h, b := approveHost(t, nil, nil)
	srv := mcp.New(h, mcp.Options{})
	defer srv.Close()
	events, stop, err := b.Subscribe("")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for _, tc := range []struct {
		version string
		answer  *sdk.ElicitResult
		isError bool
		want    string
	}{
		{mcp.ProtocolModern, &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow-once"}}, false, `"stdio":true`},
		{mcp.ProtocolModern, &sdk.ElicitResult{Action: "decline"}, true, "denied by mcp:go-approver"},
		{"2025-11-25", &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow-once"}}, false, `"stdio":true`},
		{"2025-11-25", &sdk.ElicitResult{Action: "cancel"}, true, "denied by mcp:go-approver"},
	} {
		t.Run(tc.version+"/"+tc.answer.Action, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			clientIn, serverOut := io.Pipe()
			serverIn, clientOut := io.Pipe()
			go func() { _ = srv.RunIO(ctx, serverIn, serverOut) }()
			asked := 0
			c := sdk.NewClient(&sdk.Implementation{Name: "go-approver", Version: "1"}, &sdk.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					asked++
					if r, ok := req.Params.Meta[mcp.MetaApproval]; !ok || !strings.Contains(req.Params.Message, "core:echo") {
						t.Errorf("the question: %+v %v", req.Params, r)
					}
					return tc.answer, nil
				}})
			cs, err := c.Connect(ctx, &sdk.IOTransport{Reader: clientIn, Writer: clientOut}, &sdk.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if v := cs.InitializeResult().ProtocolVersion; v != tc.version {
				t.Fatalf("negotiated %s", v)
			}
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "core__echo", Arguments: map[string]any{"stdio": true}})
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*sdk.TextContent).Text
			if res.IsError != tc.isError || !strings.Contains(text, tc.want) || asked != 1 {
				t.Fatalf("isError %v, %q, asked %d times", res.IsError, text, asked)
			}
			for ev := range events {
				if ev.Kind == approval.EventDecided {
					if ev.Record.By != "mcp:go-approver" {
						t.Fatalf("recorded by %q", ev.Record.By)
					}
					break
				}
			}
		})
	}
}

// TestApproveFirstAnswerWins: over 2025-11-25 the call waits in the
// broker while its client is asked; a decision given elsewhere first
// (here the broker's, as the console gives it) runs the call, and the
// question still open on the client is withdrawn.
func TestApproveFirstAnswerWins(t *testing.T) {
	h, b := approveHost(t, nil, nil)
	srv := mcp.New(h, mcp.Options{})
	defer srv.Close()
	events, stop, err := b.Subscribe("")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	go func() {
		for ev := range events {
			if ev.Kind == approval.EventPending {
				_, _, _ = b.Decide(ev.Request.Tenant, ev.Request.ID, approval.AllowOnce, 0, "default/console")
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	go func() { _ = srv.RunIO(ctx, serverIn, serverOut) }()
	release := make(chan struct{})
	defer close(release)
	c := sdk.NewClient(&sdk.Implementation{Name: "slow-approver", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(hctx context.Context, _ *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			select { // a person who never answers
			case <-hctx.Done():
			case <-release:
			}
			return &sdk.ElicitResult{Action: "decline"}, nil
		}})
	cs, err := c.Connect(ctx, &sdk.IOTransport{Reader: clientIn, Writer: clientOut}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "core__echo", Arguments: map[string]any{"first": "console"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || res.Content[0].(*sdk.TextContent).Text != `{"first":"console"}` {
		t.Fatalf("%+v", res.Content[0])
	}
}
