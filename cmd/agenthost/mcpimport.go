package main

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/host/runner/mcpclient"
)

func mcpImportCommand() command {
	return command{
		name: "mcp-import", usage: "mcp-import pin|diff [SERVER...]",
		summary: "pin the tool definitions of the policy's MCP servers (a lock file beside the policy), or show what changed since (diff exits 1)",
		run:     runMCPImport,
	}
}

func runMCPImport(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || (args[0] != "pin" && args[0] != "diff") {
		return usageError{"mcp-import takes pin or diff, then optionally server names"}
	}
	if e.policy == "" {
		return usageError{"mcp-import needs --policy (the policy's mcpServers, and the lock file beside it)"}
	}
	h, err := e.newHostNoDirs(ctx)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	servers := args[1:]
	if len(servers) == 0 {
		servers = h.MCPServers()
	}
	if len(servers) == 0 {
		return usageError{"the policy names no MCP server (mcpServers)"}
	}
	path := h.MCPLockPath()
	lock, err := mcpclient.ReadLock(path)
	if err != nil {
		return err
	}
	changed := 0
	for _, name := range servers {
		defs, err := h.MCPDefinitions(ctx, name)
		if err != nil {
			return err
		}
		if args[0] == "pin" {
			lock.Pin(name, defs)
			fmt.Fprintf(e.stdout, "pinned %d tools of %s\n", len(defs), name)
			continue
		}
		for _, line := range lock.Diff(name, defs) {
			fmt.Fprintln(e.stdout, escapeText(line))
			changed++
		}
	}
	if args[0] == "pin" {
		if err := lock.Write(path); err != nil {
			return err
		}
		fmt.Fprintf(e.messages(), "agenthost: wrote %s\n", path)
		return nil
	}
	if changed > 0 {
		return exitError{1}
	}
	fmt.Fprintln(e.stdout, "no change since the pins")
	return nil
}
