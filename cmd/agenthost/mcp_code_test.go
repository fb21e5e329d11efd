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

// TestMCPCodeModeStdio drives `agenthost mcp --code-mode` over stdio
// with the official Go SDK client: run_code and search_tools are listed
// (and absent without the flag), and a Starlark program calls a tool.
func TestMCPCodeModeStdio(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "agenthost")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	toolpacks, _ := filepath.Abs("../../toolpacks")
	cache := t.TempDir()
	ctx := context.Background()
	connect := func(flags ...string) *sdk.ClientSession {
		cmd := exec.Command(bin, append([]string{"mcp", "--dir", toolpacks, "--log-level", "off"}, flags...)...)
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	names := func(cs *sdk.ClientSession) string {
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range list.Tools {
			out = append(out, tl.Name)
		}
		return "," + strings.Join(out, ",") + ","
	}
	if n := names(connect()); strings.Contains(n, ",run_code,") {
		t.Fatalf("run_code without --code-mode: %s", n)
	}
	cs := connect("--code-mode")
	if n := names(cs); !strings.Contains(n, ",run_code,") || !strings.Contains(n, ",search_tools,") || !strings.Contains(n, ",core__echo,") {
		t.Fatalf("tools %s", n)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "starlark", "code": "result = tools.core.echo(via = 'program')"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, `"result":{"via":"program"}`) {
		t.Fatalf("%v %+v", err, res)
	}
}
