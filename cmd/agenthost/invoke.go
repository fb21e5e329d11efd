package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/registry"
)

func invokeCommand() command {
	return command{
		name: "invoke", jsonOnly: true, usage: "invoke ID [JSON|-|@FILE]", summary: "run one tool and print its result envelope",
		flags: func(fs *flag.FlagSet, e *env) { approveFlagSet(fs, e) },
		run:   runInvoke,
	}
}

func runInvoke(ctx context.Context, e *env, args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return usageError{"invoke takes a tool ID and optional JSON arguments (- reads stdin, @FILE reads a file)"}
	}
	var raw []byte
	if len(args) == 2 {
		b, err := e.readInput(args[1], true)
		if err != nil {
			return err
		}
		raw = b
	}
	stopApprovals, err := e.startApprovals(ctx) // the policy's approve rules ask here (approve.go)
	if err != nil {
		return err
	}
	defer stopApprovals()
	h, err := e.newHost(ctx)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	env := h.Call(ctx, args[0], json.RawMessage(raw))
	if env.Error != nil && env.Error.Code == abi.CodeUnknownTool {
		if msg := unpinnedMCP(h, args[0]); msg != "" {
			env.Error = abi.Errorf(abi.CodeLoadError, "%s", msg)
		}
	}
	if err := e.printJSON(env); err != nil {
		return err
	}
	if env.Status != abi.StatusSuccess {
		return exitError{1}
	}
	return nil
}

// unpinnedMCP says why a tool of an MCP server of the policy is not in
// the catalogue, and how to pin it; "" when id names no such server.
func unpinnedMCP(h interface {
	Policy() *policy.Policy
	Failures() []registry.Failure
}, id string) string {
	rest, ok := strings.CutPrefix(id, manifest.NamespaceMCP+":")
	server, _, _ := strings.Cut(rest, ".")
	if _, named := h.Policy().MCPServers[server]; !ok || !named {
		return ""
	}
	for _, f := range h.Failures() {
		if f.ToolID == manifest.NamespaceMCP+":"+server {
			return fmt.Sprintf("%s is not loaded: %s", id, f.Error())
		}
	}
	return fmt.Sprintf("%s is not in the catalogue: the pins of the MCP server %s do not hold it; if the server serves it, review it (agenthost mcp-import diff %s) and pin it (agenthost mcp-import pin %s)", id, server, server, server)
}
