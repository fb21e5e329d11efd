// Command server is a small MCP server (stdio) for agenthost's tests:
// echo (its description read from description.txt beside it, so a test
// can change the definition: a rug-pull), add (structured output), and
// readfile (reads any path it is given: the sandbox must stop it outside
// its folder); with --colliding also a.b and a_b (one wire name).
package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text"`
}

type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type addOut struct {
	Sum float64 `json:"sum"`
}

type readIn struct {
	Path string `json:"path"`
}

func main() {
	exe, _ := os.Executable()
	desc, err := os.ReadFile(filepath.Join(filepath.Dir(exe), "description.txt"))
	if err != nil {
		desc = []byte("Echoes its text.")
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "test-server", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: strings.TrimSpace(string(desc))}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two numbers."}, func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
		return nil, addOut{Sum: in.A + in.B}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "readfile", Description: "Reads a file."}, func(_ context.Context, _ *mcp.CallToolRequest, in readIn) (*mcp.CallToolResult, any, error) {
		b, err := os.ReadFile(in.Path)
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
	})
	// Hostile tools, for the host's robustness tests.
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answers."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	mcp.AddTool(s, &mcp.Tool{Name: "huge", Description: "Answers 2 MiB of text."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 2<<20)}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "flood", Description: "Sends 5,000 log notifications, then answers."}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		for i := range 5000 {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: i})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "flooded"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "garbage", Description: "Writes garbage on the protocol stream."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		os.Stdout.WriteString("this is not JSON-RPC\n{\"jsonrpc\":\n")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "after garbage"}}}, nil, nil
	})
	if len(os.Args) > 1 && os.Args[1] == "--colliding" {
		// Two names that differ only where the wire mapping joins them.
		for _, name := range []string{"a.b", "a_b"} {
			mcp.AddTool(s, &mcp.Tool{Name: name, Description: "Answers its own name."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
			})
		}
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
}
