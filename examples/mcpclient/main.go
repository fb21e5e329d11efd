// Command mcpclient is an MCP client (the official Go SDK's) talking to
// `agenthost mcp` over stdio: it lists the tools and calls two of them, as
// any MCP-speaking agent would. `make demo` runs it.
//
//	go run ./examples/mcpclient -agenthost bin/agenthost -dir toolpacks
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	bin := flag.String("agenthost", "bin/agenthost", "the agenthost binary")
	dir := flag.String("dir", "toolpacks", "toolpack folder")
	flag.Parse()
	if err := run(context.Background(), *bin, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "mcpclient:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, bin, dir string) error {
	cmd := exec.Command(bin, "mcp", "--dir", dir, "--log-level", "error")
	cmd.Stderr = os.Stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "mcpclient-example", Version: "1"}, nil).
		Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	init := cs.InitializeResult()
	fmt.Printf("connected to %s %s (MCP %s)\n", init.ServerInfo.Name, init.ServerInfo.Version, init.ProtocolVersion)
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	var names []string
	for _, t := range list.Tools {
		names = append(names, t.Name)
	}
	fmt.Printf("tools/list: %d tools: %s\n", len(names), strings.Join(names, ", "))
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"text__stats", map[string]any{"text": "MCP clients call WASM tools", "top": 1}},
		{"hash__digest", map[string]any{"text": "hello"}},
	} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: c.name, Arguments: c.args})
		if err != nil {
			return fmt.Errorf("tools/call %s: %w", c.name, err)
		}
		fmt.Printf("tools/call %s (isError %v): %s\n", c.name, res.IsError, res.Content[0].(*sdk.TextContent).Text)
	}
	return nil
}
