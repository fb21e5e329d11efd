package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPStdio builds the CLI and drives `agenthost mcp` over stdio with
// the official Go SDK client: list, then call a tool.
func TestMCPStdio(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "agenthost")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	toolpacks, _ := filepath.Abs("../../toolpacks")
	cmd := exec.Command(bin, "mcp", "--dir", toolpacks, "--log-level", "off")
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "core__echo") {
		t.Fatalf("tools %v", names)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "core__echo", Arguments: map[string]any{"via": "stdio"}})
	if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != `{"via":"stdio"}` {
		t.Fatalf("%v %+v", err, res)
	}
}
