package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/registry"
	"github.com/agenthost/agenthost/host/runner/mcpclient"
)

func listCommand() command {
	return command{
		name: "list", usage: "list [--json] [--check] [--namespace NS] [--tag TAG]", summary: "list the tools: id, version, handler, tags; denied tools, load errors and unpinned MCP servers marked, and with --check the MCP tools whose servers changed them (exit 1 on a load error or a change)",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.BoolVar(&e.asJSON, "json", false, "print JSON")
			fs.BoolVar(&listCheck, "check", false, "start the policy's MCP servers and compare their tools with the pins: changed, unpinned (new) and removed tools")
			fs.StringVar(&e.namespace, "namespace", "", "only tools in this namespace")
			fs.StringVar(&e.tag, "tag", "", "only tools with this tag")
		},
		run: runList,
	}
}

type listedTool struct {
	ID          string   `json:"id"`
	Version     string   `json:"version"`
	Handler     string   `json:"handler"`
	DisplayName string   `json:"displayName"`
	Tags        []string `json:"tags"`
	// Status is "ok", "denied" (the policy denies the tool), "load
	// error", "unpinned" (an MCP server's tool, or a whole server, not
	// pinned), or with --check "changed" or "removed" (an MCP tool whose
	// server now defines it differently, or no longer serves it).
	Status string `json:"status"`
	// Error is the load error, when Status is "load error".
	Error string `json:"error,omitempty"`
	// Path is the manifest of a tool that failed to load.
	Path string `json:"path,omitempty"`
}

func runList(ctx context.Context, e *env, args []string) error {
	if len(args) != 0 {
		return usageError{"list takes no arguments"}
	}
	h, err := e.newHost(ctx)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	tools := []listedTool{}
	q := host.Query{Namespace: e.namespace, Uncallable: true} // listed with status "denied"
	if e.tag != "" {
		q.Tags = []string{e.tag}
	}
	for _, t := range h.Tools(q) {
		handler := t.Handler.Type
		switch {
		case t.Handler.ABI != "":
			handler += "/" + t.Handler.ABI
		case t.Handler.Language != "":
			handler += "/" + t.Handler.Language
		}
		tags := t.Tags
		if tags == nil {
			tags = []string{}
		}
		status := "ok"
		if g, err := h.Grant(t.ToolID + "@" + t.Version); err == nil && g.Denied {
			status = "denied"
		}
		tools = append(tools, listedTool{ID: t.ToolID, Version: t.Version, Handler: handler, DisplayName: t.DisplayName, Tags: tags, Status: status})
	}
	servers := h.Policy().MCPServers
	for _, f := range h.Failures() {
		if e.namespace != "" || e.tag != "" {
			break
		}
		status := "load error"
		server, ok := strings.CutPrefix(f.ToolID, manifest.NamespaceMCP+":")
		if _, named := servers[server]; ok && named {
			status = "unpinned" // the whole server: its failure says how to pin it
		}
		tools = append(tools, listedTool{ID: f.ToolID, Handler: "-", Tags: []string{}, Status: status, Error: f.Err.Error(), Path: f.Path})
	}
	changed := false
	if listCheck && e.namespace == "" && e.tag == "" {
		var err error
		if tools, changed, err = checkMCP(ctx, h, tools); err != nil {
			return err
		}
	}
	result := failedLoads(h)
	if changed {
		result = exitError{1}
	}
	if e.asJSON {
		if err := e.printJSON(tools); err != nil {
			return err
		}
		return result
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tVERSION\tHANDLER\tTAGS\tSTATUS")
	for _, t := range tools {
		id := t.ID
		if id == "" {
			id = t.Path
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", id, t.Version, t.Handler, strings.Join(t.Tags, ","), t.Status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return result
}

// listCheck is list's --check.
var listCheck bool

// checkMCP starts each MCP server of the policy and compares its tools
// with the pins (as mcp-import diff does): a pinned tool defined
// differently is "changed", one no longer served "removed", and a tool
// served but not pinned is listed as "unpinned". It reports whether any
// differed.
func checkMCP(ctx context.Context, h interface {
	Policy() *policy.Policy
	MCPDefinitions(context.Context, string) ([]mcpclient.Definition, error)
}, tools []listedTool) ([]listedTool, bool, error) {
	lock, err := mcpclient.ReadLock(mcpclient.LockPath(h.Policy().Source()))
	if err != nil {
		return nil, false, err
	}
	row := map[string]int{}
	for i, t := range tools {
		row[t.ID] = i
	}
	changed := false
	for _, server := range slices.Sorted(maps.Keys(h.Policy().MCPServers)) {
		defs, err := h.MCPDefinitions(ctx, server)
		if err != nil {
			return nil, false, fmt.Errorf("--check: the MCP server %s: %w", server, err)
		}
		for _, c := range diffServer(server, lock.Servers[server], defs) {
			changed = true
			id := manifest.NamespaceMCP + ":" + server + "." + c.Tool
			fields := make([]string, len(c.Fields))
			for i, f := range c.Fields {
				fields[i] = f.Field
			}
			why := fmt.Sprintf("%s since the pins (agenthost mcp-import diff %s)", strings.Join(fields, ", "), server)
			status := map[string]string{"added": "unpinned", "removed": "removed", "changed": "changed"}[c.Change]
			if i, ok := row[id]; ok {
				tools[i].Status, tools[i].Error = status, c.Change+": "+why
				continue
			}
			tools = append(tools, listedTool{ID: id, Handler: "mcp", Tags: []string{}, Status: status, Error: "not pinned: " + why})
		}
	}
	return tools, changed, nil
}

// failedLoads is exit 1 when any manifest failed to load.
func failedLoads(h interface{ Failures() []registry.Failure }) error {
	if len(h.Failures()) > 0 {
		return exitError{1}
	}
	return nil
}
