package mcp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/mcp"
)

// ExampleServer_RunIO serves a host's catalogue to one MCP client over a
// pair of streams, as `agenthost mcp` does on stdin and stdout: the
// handshake, then a call of a Go tool by its wire name.
func ExampleServer_RunIO() {
	type args struct {
		Name string `json:"name"`
	}
	type greeting struct {
		Text string `json:"text"`
	}
	greet := host.Func(host.FuncSpec{ID: "demo:greet", Description: "Greets someone."}, func(_ context.Context, a args) (greeting, error) {
		return greeting{Text: "hello " + a.Name}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := host.New(ctx, host.Options{Tools: []host.Tool{greet}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close(ctx)
	srv := mcp.New(h, mcp.Options{})
	defer srv.Close()

	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	defer clientOut.Close() // the end of the client's stream ends the session
	go func() { _ = srv.RunIO(ctx, serverIn, serverOut) }()
	answers := bufio.NewReader(clientIn)
	send := func(msg string) {
		fmt.Fprintln(clientOut, msg)
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"example","version":"1"}}}`)
	if _, err := answers.ReadString('\n'); err != nil {
		fmt.Println(err)
		return
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo__greet","arguments":{"name":"Ada"}}}`)
	answer, err := answers.ReadString('\n')
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(answer)
	// Output:
	// {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"{\"text\":\"hello Ada\"}"}],"structuredContent":{"text":"hello Ada"}}}
}
